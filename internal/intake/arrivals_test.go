package intake_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
)

const arrivalsForm = `
id: fair
fields: [{name: name, type: text, required: true}]
origins: [https://fair.example.org]
`

// uuid4 is a key shaped as the SDK's.
func uuid4() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func beacon(keys []string, typ string) string {
	var ev []string
	for _, k := range keys {
		state := ""
		if typ == "answered" {
			state = `,"state":"received"`
		}
		ev = append(ev, fmt.Sprintf(`{"key":%q,"type":%q,"at":%d%s}`, k, typ, time.Now().UnixMilli(), state))
	}
	return `{"events":[` + strings.Join(ev, ",") + `]}`
}

type proofDoc struct {
	Arrivals []struct{ Started, Reached int64 }
	Refused  int64 `json:"arrivals_refused"`
}

func proofOf(t *testing.T, h *servertest.Harness) (started, reached, refused int64) {
	t.Helper()
	r, b := send(t, servertest.Client(), h.URL, req{method: "GET", path: "/v1/admin/forms/fair/proof", headers: map[string]string{"Authorization": "Bearer " + h.Token}})
	var p proofDoc
	if r.StatusCode != 200 || json.Unmarshal(b, &p) != nil {
		t.Fatalf("proof: %d %s", r.StatusCode, b)
	}
	for _, a := range p.Arrivals {
		started += a.Started
		reached += a.Reached
	}
	return started, reached, p.Refused
}

// TestForgedArrivalsRefused: the attacker's probe — hundreds of posts of
// 100 made-up "started" reports without an Origin — moves neither the
// started count nor the arrival rate, and the proof counts the refused
// reports; a foreign origin and keys unlike the SDK's are refused; the
// budget per address ends a flood with 429; real reports still count.
func TestForgedArrivalsRefused(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, arrivalsForm, servertest.Options{})
	c := servertest.Client()
	post := func(body string, headers map[string]string) int {
		t.Helper()
		r, _ := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: body, headers: headers})
		return r.StatusCode
	}
	// A real submission, reported by the SDK of the form's page.
	real := uuid4()
	if r, b := send(t, c, h.URL, jsonReq("fair", real, `{"name":"Ann"}`)); r.StatusCode != 201 {
		t.Fatalf("submission: %d %s", r.StatusCode, b)
	}
	page := map[string]string{"Origin": "https://fair.example.org"}
	if st := post(beacon([]string{real}, "started"), page); st != 202 {
		t.Fatalf("the page's report: %d", st)
	}
	// The probe: no Origin, made-up keys shaped as the SDK's.
	var accepted, limited int
	for range 60 {
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = uuid4()
		}
		switch st := post(beacon(keys, "started"), nil); st {
		case 202:
			accepted++
		case 429:
			limited++
		default:
			t.Fatalf("a forged report: %d", st)
		}
	}
	if limited == 0 || accepted == 0 || accepted > 10 {
		t.Errorf("60 posts of 100 from one address: %d taken, %d over the budget; want the budget to end it after 1,000 events", accepted, limited)
	}
	// Another origin is refused.
	if st := post(beacon([]string{uuid4()}, "started"), map[string]string{"Origin": "https://evil.example"}); st != 403 {
		t.Errorf("a foreign origin: %d, want 403", st)
	}
	// Reports are written in batches (the ArrivalBatcher), within a
	// fraction of a second.
	poll.UntilNil(t, "the proof after the probe", 10*time.Second, func() error {
		started, reached, refused := proofOf(t, h)
		if started != 1 || reached != 1 || refused < int64(accepted*100) {
			return fmt.Errorf("%d started, %d reached, %d refused; want only the real key (1 of 1), and at least the %d forged ones taken and dropped refused", started, reached, refused, accepted*100)
		}
		return nil
	})
}

// TestArrivalsFromTheFormsPages: reports from a listed origin (or the
// hosted page, this server) on keys never received are kept, so the proof
// page shows them; keys unlike the SDK's are refused and counted.
func TestArrivalsFromTheFormsPages(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, arrivalsForm, servertest.Options{})
	c := servertest.Client()
	lost := uuid4()
	r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon([]string{lost}, "started"),
		headers: map[string]string{"Origin": h.URL}})
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("the hosted page's report: %d %s", r.StatusCode, b)
	}
	// Keys unlike the SDK's (or the hosted page's, a UUID v7) are refused.
	for _, key := range []string{"fake-1", "0B8F4F52-3F3E-4C1A-9D57-2A4E8F1F6C01", "0b8f4f52-3f3e-1c1a-9d57-2a4e8f1f6c01"} {
		if r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon([]string{key}, "started"),
			headers: map[string]string{"Origin": h.URL}}); r.StatusCode != http.StatusBadRequest {
			t.Errorf("key %s: %d %s, want 400", key, r.StatusCode, b)
		}
	}
	v7 := "019ad2c4-5b6e-7c1a-9d57-2a4e8f1f6c01"
	if r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon([]string{v7}, "started"),
		headers: map[string]string{"Origin": "https://fair.example.org"}}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the hosted page's key from a listed origin: %d %s", r.StatusCode, b)
	}
	poll.UntilNil(t, "the proof", 10*time.Second, func() error {
		if started, reached, refused := proofOf(t, h); started != 2 || reached != 0 || refused != 3 {
			return fmt.Errorf("%d started, %d reached, %d refused; want the two lost keys shown and the three bad ones counted", started, reached, refused)
		}
		return nil
	})
}

// TestArrivalsWithoutOrigin: a client without an Origin (a mini-program)
// confirms keys the server has; its reports on other keys are dropped and
// counted as refused.
func TestArrivalsWithoutOrigin(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, arrivalsForm, servertest.Options{})
	c := servertest.Client()
	real, forged := uuid4(), uuid4()
	if r, b := send(t, c, h.URL, jsonReq("fair", real, `{"name":"Ann"}`)); r.StatusCode != 201 {
		t.Fatalf("submission: %d %s", r.StatusCode, b)
	}
	r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon([]string{real, forged}, "started")})
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("a mini-program's reports: %d %s", r.StatusCode, b)
	}
	poll.UntilNil(t, "the proof", 10*time.Second, func() error {
		if started, reached, refused := proofOf(t, h); started != 1 || reached != 1 || refused != 1 {
			return fmt.Errorf("%d started, %d reached, %d refused; want the real key (1 of 1) and the forged one refused", started, reached, refused)
		}
		return nil
	})
}

// TestArrivalsFormBudget: reports from many addresses meet the form's own
// budget (20,000 events at once on an instance), past which they are
// refused with 429, whatever the address.
func TestArrivalsFormBudget(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, arrivalsForm, servertest.Options{Config: func(c *config.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}})
	c := servertest.Client()
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = uuid4()
	}
	body := beacon(keys, "started")
	taken, refused := 0, 0
	for i := range 400 {
		// Ten posts of 100 from each address: within its own budget.
		addr := fmt.Sprintf("198.51.100.%d", i/10)
		r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: body,
			headers: map[string]string{"Origin": "https://fair.example.org", "X-Forwarded-For": addr}})
		switch r.StatusCode {
		case http.StatusAccepted:
			taken++
		case http.StatusTooManyRequests:
			refused++
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %s", b)
			}
		default:
			t.Fatalf("post %d: %d %s", i, r.StatusCode, b)
		}
	}
	// No address goes past its own budget (1,000 events); 200 posts make
	// the form's burst, and the refill (200 events a second) cannot take
	// the other 20,000 unless the loop ran for 100 seconds.
	if taken < 200 || refused == 0 {
		t.Fatalf("%d of 400 posts of 100 events from 40 addresses taken, %d refused; want the burst taken and the form's budget to refuse the rest", taken, refused)
	}
}

// TestArrivalsNewKeysBudget is issue 30's probe: reports with this
// server's own Origin (the hosted page's, which a script can send) from
// 22 addresses recorded 22,300 made-up keys. The keys reports alone may
// add to a form are budgeted (2,000, then 20 a second, per instance);
// past it reports still confirm the keys that reached the store.
func TestArrivalsNewKeysBudget(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, arrivalsForm, servertest.Options{Config: func(c *config.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}})
	c := servertest.Client()
	start := time.Now()
	for i := range 190 {
		keys := make([]string, 100)
		for j := range keys {
			keys[j] = uuid4()
		}
		addr := fmt.Sprintf("198.51.100.%d", i/10)
		r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon(keys, "started"),
			headers: map[string]string{"Origin": h.URL, "X-Forwarded-For": addr}})
		if r.StatusCode != http.StatusAccepted {
			t.Fatalf("post %d: %d %s", i, r.StatusCode, b)
		}
	}
	// A real submission's reports, after the flood, still count.
	real := uuid4()
	if r, b := send(t, c, h.URL, jsonReq("fair", real, `{"name":"Ann"}`)); r.StatusCode != 201 {
		t.Fatalf("submission: %d %s", r.StatusCode, b)
	}
	if r, b := send(t, c, h.URL, req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json", body: beacon([]string{real}, "started"),
		headers: map[string]string{"Origin": h.URL, "X-Forwarded-For": "203.0.113.77"}}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the real key's report: %d %s", r.StatusCode, b)
	}
	most := int64(2000 + 20*(time.Since(start).Seconds()+1) + 1)
	poll.UntilNil(t, "the proof", 10*time.Second, func() error {
		started, reached, refused := proofOf(t, h)
		if started > most || reached != 1 || refused < 19000-most {
			return fmt.Errorf("%d started (want at most %d of 19,000 made up, and the real one), %d reached, %d refused", started, most, reached, refused)
		}
		return nil
	})
}
