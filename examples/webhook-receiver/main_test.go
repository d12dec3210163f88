package main

import (
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/webhooks"
)

// The example verifies what formd's sender signs, including during a
// rotation when it knows only the old secret.
func TestReceiverVerifiesFormdSignatures(t *testing.T) {
	log.SetOutput(&strings.Builder{})
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	oldSecret, newSecret := webhooks.NewSecret(), webhooks.NewSecret()
	keys, err := parseSecrets(oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	rc := &receiver{secrets: keys, now: func() time.Time { return now }, seen: map[string]bool{}}
	body := `{"type":"submission.stored","timestamp":"2027-03-01T09:00:00Z","data":{"id":"s1","form":"f","status":"stored"}}`
	parse := func(s string) webhooks.Secret {
		sec, err := webhooks.ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		return sec
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		id      string
		ts      time.Time
		body    string
		want    int
	}{
		{"signed with its secret", []string{oldSecret}, "evt_1", now, body, 204},
		{"the same event again", []string{oldSecret}, "evt_1", now, body, 204},
		{"during rotation", []string{oldSecret, newSecret}, "evt_2", now, body, 204},
		{"after rotation, before the receiver is updated", []string{newSecret}, "evt_3", now, body, 401},
		{"too old", []string{oldSecret}, "evt_4", now.Add(-6 * time.Minute), body, 401},
		{"not an event", []string{oldSecret}, "evt_5", now, "[]", 400},
	} {
		var secrets []webhooks.Secret
		for _, s := range tc.secrets {
			secrets = append(secrets, parse(s))
		}
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		req.Header.Set("webhook-id", tc.id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(tc.ts.Unix(), 10))
		req.Header.Set("webhook-signature", webhooks.Sign(secrets, tc.id, tc.ts, []byte(tc.body)))
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
}
