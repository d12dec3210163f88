// Command webhook-receiver is a minimal receiver for formd's webhooks,
// written with the Go standard library alone so that it can be copied into
// any service. It checks each delivery's Standard Webhooks signature and
// timestamp, drops repeats by webhook-id (formd delivers at least once,
// so the same event can arrive twice), and answers 204.
//
//	WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver -addr 127.0.0.1:8787
//
// While the endpoint's secret is being rotated, WEBHOOK_SECRET may hold
// the old and the new secret separated by a space; formd signs with both.
// Point the form at it with `--webhook-allow 127.0.0.0/8`, since formd
// refuses loopback addresses by default.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tolerance is how far webhook-timestamp may be from this machine's
// clock; an older delivery could be a recording replayed by someone else.
const tolerance = 5 * time.Minute

// maxBody bounds what is read from a request before it is verified.
const maxBody = 1 << 20

func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "address to listen on")
	flag.Parse()
	secrets, err := parseSecrets(os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		log.Fatalf("WEBHOOK_SECRET: %v", err)
	}
	r := &receiver{secrets: secrets, now: time.Now, seen: map[string]bool{}}
	srv := &http.Server{Addr: *addr, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on http://%s", *addr)
	log.Fatal(srv.ListenAndServe())
}

// parseSecrets reads "whsec_<base64>" secrets separated by spaces.
func parseSecrets(s string) ([][]byte, error) {
	var keys [][]byte
	for _, f := range strings.Fields(s) {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f, "whsec_"))
		if err != nil || !strings.HasPrefix(f, "whsec_") {
			return nil, errors.New(`want "whsec_" followed by standard base64`)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no secret given")
	}
	return keys, nil
}

// verify checks a delivery per Standard Webhooks: the signed content is
// "{webhook-id}.{webhook-timestamp}.{body}", signed with HMAC-SHA256, and
// webhook-signature lists one or more "v1,<base64>" signatures separated
// by spaces, any one of which may match.
func verify(secrets [][]byte, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not Unix seconds")
	}
	if t := time.Unix(unix, 0); t.Before(now.Add(-tolerance)) || t.After(now.Add(tolerance)) {
		return errors.New("webhook-timestamp is too far from now")
	}
	for _, key := range secrets {
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "%s.%d.", id, unix)
		m.Write(body)
		want := m.Sum(nil)
		for _, sig := range strings.Fields(sigs) {
			version, encoded, _ := strings.Cut(sig, ",")
			got, err := base64.StdEncoding.DecodeString(encoded)
			if version == "v1" && err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return errors.New("no matching signature")
}

// receiver handles deliveries. A real one would record webhook-id in its
// database, under a unique index, in the same transaction as the work the
// event causes; the map here only shows where that check goes.
type receiver struct {
	secrets [][]byte
	now     func() time.Time

	mu   sync.Mutex
	seen map[string]bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := verify(rc.secrets, r.Header, body, rc.now()); err != nil {
		// Say little: the sender learns nothing useful from details.
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		log.Printf("refused a delivery: %v", err)
		return
	}
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	dup := rc.seen[id]
	rc.seen[id] = true
	rc.mu.Unlock()
	if dup {
		// Still 2xx: formd must stop retrying an event we already have.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var event struct {
		Type string `json:"type"`
		Data struct {
			ID     string `json:"id"`
			Form   string `json:"form"`
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &event); err != nil {
		http.Error(w, "body is not a formd event", http.StatusBadRequest)
		return
	}
	log.Printf("%s %s: submission %s on form %s is %s", id, event.Type, event.Data.ID, event.Data.Form, event.Data.Status)
	w.WriteHeader(http.StatusNoContent)
}
