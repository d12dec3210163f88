package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestDeliveriesEndToEnd: a submission's life reaches the owner's
// endpoint as signed events — stored, waitlisted, cancelled, promoted —
// each with its log in the admin API, and a redelivery sends the same
// event (the same webhook-id) again.
func TestDeliveriesEndToEnd(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, _ := standardwebhooks.NewWebhook(secret)
	var mu sync.Mutex
	var got []string // "type id"
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
		}
		var ev struct{ Type string }
		json.Unmarshal(body, &ev)
		mu.Lock()
		got = append(got, ev.Type+" "+r.Header.Get("webhook-id"))
		mu.Unlock()
	}))
	defer recv.Close()
	received := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
	forms := fmt.Sprintf(`
id: club
fields: [{name: name, type: text, required: true}]
capacity: 1
when_full: waitlist
notify:
  webhooks: [{url: %q, secret: %s}]
`, recv.URL, secret)
	h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) {
		c.WebhookAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}})
	post := func(path, token, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", h.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var first struct{ ID string }
	code, b := post("/v1/forms/club/submissions", "", `{"name":"Ann"}`)
	if code != 201 || json.Unmarshal(b, &first) != nil {
		t.Fatalf("first: %d %s", code, b)
	}
	if code, b := post("/v1/forms/club/submissions", "", `{"name":"Bo"}`); code != 201 {
		t.Fatalf("second: %d %s", code, b)
	}
	poll.Until(t, "stored and waitlisted", 15*time.Second, func() bool { return len(received()) == 2 })
	if code, b := post("/v1/admin/forms/club/entries/"+first.ID+"/cancel", h.Token, ""); code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	poll.Until(t, "cancelled and promoted", 15*time.Second, func() bool { return len(received()) == 4 })
	kinds := strings.Join(received(), "\n")
	for _, want := range []string{"submission.stored evt_" + first.ID + "_stored", "submission.waitlisted", "submission.cancelled evt_" + first.ID + "_cancelled", "submission.promoted"} {
		if !strings.Contains(kinds, want) {
			t.Fatalf("received:\n%s\nwant %q", kinds, want)
		}
	}
	req, _ := http.NewRequest("GET", h.URL+"/v1/admin/forms/club/entries/"+first.ID, nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Deliveries []struct {
			EventID  string `json:"event_id"`
			EventSeq uint64 `json:"event_seq"`
			Endpoint string
			State    string
			Attempts []struct{ Status int }
		}
	}
	json.NewDecoder(resp.Body).Decode(&log)
	resp.Body.Close()
	if len(log.Deliveries) != 2 || log.Deliveries[0].State != "delivered" || len(log.Deliveries[0].Attempts) != 1 || log.Deliveries[0].Attempts[0].Status != 200 {
		t.Fatalf("delivery log: %+v", log)
	}
	d := log.Deliveries[0]
	code, b = post("/v1/admin/forms/club/entries/"+first.ID+"/redeliver", h.Token, fmt.Sprintf(`{"event_seq":%d,"endpoint":%q}`, d.EventSeq, d.Endpoint))
	if code != 202 {
		t.Fatalf("redeliver: %d %s", code, b)
	}
	poll.Until(t, "the redelivery", 15*time.Second, func() bool { return len(received()) == 5 })
	if last := received()[4]; !strings.HasSuffix(last, " "+d.EventID) {
		t.Fatalf("the redelivery is %q, want the same id %s", last, d.EventID)
	}
}
