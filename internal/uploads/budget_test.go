package uploads

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fromHeader is a ClientIP for tests: the address in X-Test-Client.
func fromHeader(r *http.Request) string { return r.Header.Get("X-Test-Client") }

// createFrom makes an upload of n bytes of field photo of form from the
// address, and returns the answer.
func (r *rig) createFrom(formID, addr string, n int, md ...string) *http.Response {
	r.t.Helper()
	return r.do("POST", "/v1/forms/"+formID+"/uploads", map[string]string{
		"Upload-Length": strconv.Itoa(n), "Upload-Metadata": metadata(append([]string{"field", "photo", "filename", "p.png"}, md...)...),
		"X-Test-Client": addr,
	}, nil)
}

func wantRefused(t *testing.T, res *http.Response, status int, code string) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("answer %d, want %d %s", res.StatusCode, status, code)
	}
	if got := problemCode(t, res); !strings.HasPrefix(got, code+":") {
		t.Fatalf("problem %q, want %s", got, code)
	}
}

// TestUploadFloodFromOneAddress is issue 30's flood: one address making
// upload after upload that it never finishes nor claims. Its uploads in
// flight and its unclaimed bytes are bounded; another address is not
// counted with it.
func TestUploadFloodFromOneAddress(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	r := newRigWith(t, photoForm, func(c *Config) {
		c.ClientIP, c.Registerer = fromHeader, reg
		c.Limits = store.UploadLimits{SourceInFlight: 3, SourceBytes: 100 << 10, FormInFlight: 50, FormBytes: 10 << 20}
	})
	for i := range 3 {
		if res := r.createFrom("exam", "198.51.100.1", 1000); res.StatusCode != 201 {
			t.Fatalf("upload %d within the budget: %d", i, res.StatusCode)
		}
	}
	res := r.createFrom("exam", "198.51.100.1", 1000)
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("a refused upload without Retry-After")
	}
	wantRefused(t, res, 429, "upload-budget-spent")
	if res := r.createFrom("exam", "198.51.100.2", 1000); res.StatusCode != 201 {
		t.Fatalf("another address: %d", res.StatusCode)
	}
	// Bytes: finished uploads no submission claims still count.
	done := newRigWith(t, photoForm, func(c *Config) {
		c.ClientIP = fromHeader
		c.Limits = store.UploadLimits{SourceBytes: 100 << 10}
	})
	body := png(40 << 10)
	for range 2 {
		res := done.createFrom("exam", "198.51.100.3", len(body))
		if res.StatusCode != 201 {
			t.Fatalf("create: %d", res.StatusCode)
		}
		if res := done.patch(res.Header.Get("Location"), 0, body, false); res.StatusCode != 204 {
			t.Fatalf("PATCH: %d", res.StatusCode)
		}
	}
	wantRefused(t, done.createFrom("exam", "198.51.100.3", len(body)), 429, "upload-budget-spent")
	if got := metricValue(t, r.svc.metrics.refused.WithLabelValues(store.BudgetSourceInFlight)); got != 1 {
		t.Fatalf("formd_uploads_refused_total{reason=%q} = %v, want 1", store.BudgetSourceInFlight, got)
	}
}

// TestUploadFloodFromOneSlash64: the addresses of one IPv6 /64 are one
// address for the budget; the next /64 is another.
func TestUploadFloodFromOneSlash64(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, photoForm, func(c *Config) {
		c.ClientIP = fromHeader
		c.Limits = store.UploadLimits{SourceInFlight: 3}
	})
	for i := range 3 {
		if res := r.createFrom("exam", fmt.Sprintf("2001:db8:1:2::%x", i+1), 10); res.StatusCode != 201 {
			t.Fatalf("upload %d: %d", i, res.StatusCode)
		}
	}
	wantRefused(t, r.createFrom("exam", "2001:db8:1:2:ffff:ffff:ffff:ffff", 10), 429, "upload-budget-spent")
	if res := r.createFrom("exam", "2001:db8:1:3::1", 10); res.StatusCode != 201 {
		t.Fatalf("the next /64: %d", res.StatusCode)
	}
	for in, want := range map[string]string{
		"2001:db8:1:2:aaaa::1": "2001:db8:1:2::/64", "::ffff:192.0.2.1": "192.0.2.1", "192.0.2.1": "192.0.2.1",
	} {
		if got := SourceKey(in); got != want {
			t.Errorf("SourceKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestUploadFormQuota: a form's unclaimed bytes are bounded whatever the
// addresses they come from.
func TestUploadFormQuota(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, photoForm, func(c *Config) {
		c.ClientIP = fromHeader
		c.Limits = store.UploadLimits{FormBytes: 100 << 10}
	})
	for i := range 3 {
		if res := r.createFrom("exam", fmt.Sprintf("192.0.2.%d", i+1), 30<<10); res.StatusCode != 201 {
			t.Fatalf("upload %d: %d", i, res.StatusCode)
		}
	}
	wantRefused(t, r.createFrom("exam", "192.0.2.99", 30<<10), 429, "upload-budget-spent")
}

const timedForms = `
id: closed
closes_at: 2027-02-01T00:00:00Z
fields: [{name: photo, type: file, max_size: 64KiB}]
---
id: later
opens_at: 2027-04-01T00:00:00Z
fields: [{name: photo, type: file, max_size: 64KiB}]
---
id: pow
spam: {challenge: pow, difficulty: 1000}
fields: [{name: photo, type: file, max_size: 64KiB}]
`

// TestUploadsToAClosedForm: a form that has closed, or has not opened,
// takes no upload (it would take no submission to claim it).
func TestUploadsToAClosedForm(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, timedForms, func(c *Config) { c.ClientIP = fromHeader })
	for _, id := range []string{"closed", "later"} {
		wantRefused(t, r.createFrom(id, "192.0.2.1", 10), 410, "form-closed")
	}
	if res := r.createFrom("pow", "192.0.2.1", 10); res.StatusCode == 201 {
		t.Fatal("an open form that asks for a proof-of-work took an upload without one")
	}
}

// TestUploadProofOfWork: where the form asks for a proof-of-work, the
// upload is created only with a solution, spent once.
func TestUploadProofOfWork(t *testing.T) {
	t.Parallel()
	signer := challenge.NewSignerKey("test key")
	var spender *rig
	r := newRigWith(t, timedForms, func(c *Config) {
		c.ClientIP = fromHeader
		c.Proof = &Proof{Signer: signer, Spend: spendVia(func() *rig { return spender })}
	})
	spender = r
	wantRefused(t, r.createFrom("pow", "192.0.2.1", 10), 400, "challenge-required")
	wantRefused(t, r.createFrom("pow", "192.0.2.1", 10, "altcha", "bm90IGEgc29sdXRpb24="), 403, "challenge-invalid")
	p, ok := challenge.Solve(signer.Issue("pow", 1000, r.clock.Now().Add(time.Minute)))
	if !ok {
		t.Fatal("no solution")
	}
	sol := challenge.Encode(p)
	if res := r.createFrom("pow", "192.0.2.1", 10, "altcha", sol); res.StatusCode != 201 {
		t.Fatalf("with a solution: %d %s", res.StatusCode, problemCode(t, res))
	}
	wantRefused(t, r.createFrom("pow", "192.0.2.1", 10, "altcha", sol), 403, "challenge-invalid")
	// A solution for another form is not one for this.
	p2, _ := challenge.Solve(signer.Issue("exam", 1000, r.clock.Now().Add(time.Minute)))
	wantRefused(t, r.createFrom("pow", "192.0.2.1", 10, "altcha", challenge.Encode(p2)), 403, "challenge-invalid")
}

// spendVia spends through the rig's store once the rig is made.
type spendVia func() *rig

func (f spendVia) SpendChallenge(ctx context.Context, u store.ChallengeUse, now time.Time) (bool, error) {
	return f().st.SpendChallenge(ctx, u, now)
}

// TestUploadReserve is issue 30's full disk: once the free space under
// the uploads would drop below the reserve, new uploads and the writes
// of those in flight are refused with 507 and Retry-After, so that what
// is left stays for the journal and the store; with room again they go
// on.
func TestUploadReserve(t *testing.T) {
	t.Parallel()
	var free atomic.Int64
	free.Store(10 << 20)
	reg := prometheus.NewRegistry()
	r := newRigWith(t, photoForm, func(c *Config) {
		c.ClientIP, c.Registerer = fromHeader, reg
		c.Reserve = 8 << 20
		c.FreeSpace = func(string) (int64, error) { return free.Load(), nil }
	})
	body := png(40 << 10)
	res := r.createFrom("exam", "192.0.2.1", len(body))
	if res.StatusCode != 201 {
		t.Fatalf("with room: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	free.Store(8<<20 + 10<<10) // room for 10 KiB more
	res = r.createFrom("exam", "192.0.2.2", len(body))
	if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra <= 0 {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	wantRefused(t, res, 507, "upload-storage-full")
	free.Store(8<<20 - 1)
	wantRefused(t, r.patch(loc, 0, body, false), 507, "upload-storage-full")
	if got := metricValue(t, r.svc.metrics.refused.WithLabelValues("reserve")); got != 2 {
		t.Fatalf("refusals for the reserve %v, want 2", got)
	}
	if got := metricValue(t, r.svc.metrics.free); got != 8<<20-1 {
		t.Fatalf("formd_uploads_free_bytes %v", got)
	}
	free.Store(1 << 30)
	if res := r.patch(loc, 0, body, false); res.StatusCode != 204 {
		t.Fatalf("with room again: %d", res.StatusCode)
	}
}

// metricValue reads a counter or a gauge.
func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// TestTusAnswersInTusTerms is issue 30's loose end: a deferred length
// was answered 501 internal-error, a PATCH taken over by another a bare
// 400. Each says what and why, as a tus client understands it.
func TestTusAnswersInTusTerms(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	res := r.do("POST", "/v1/forms/exam/uploads", map[string]string{"Upload-Defer-Length": "1", "Upload-Metadata": metadata("field", "photo")}, nil)
	if res.StatusCode != 400 {
		t.Fatalf("a deferred length: %d", res.StatusCode)
	}
	if got := problemCode(t, res); !strings.HasPrefix(got, "invalid-request: ") || !strings.Contains(got, "creation-defer-length") || !strings.Contains(got, "Upload-Length") {
		t.Fatalf("a deferred length: %s", got)
	}
	for msg, want := range map[string]string{
		"ERR_UPLOAD_INTERRUPTED: upload has been interrupted by another request for this upload resource\n": "another request for this upload took it over",
		"ERR_UPLOAD_LOCKED: file currently locked\n":                                                        "another request is writing this upload now",
		"ERR_SOMETHING: what tusd said\n":                                                                   "ERR_SOMETHING: what tusd said",
	} {
		if got := tusDetail(400, msg); !strings.Contains(got, want) {
			t.Errorf("tusDetail(%q) = %q, want %q in it", msg, got, want)
		}
	}
}

// A plain post's file to a closed form is not kept (intake reads the
// body, files and all, before it can tell a retry from a new post).
func TestPostedFileToAClosedForm(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, timedForms, nil)
	_, err := r.svc.Put(context.Background(), r.forms["closed"], "photo", "p.png", "key-1", 0, bytes.NewReader(png(100)))
	if p := problem.From(err); err == nil || p.Code != problem.CodeFormClosed {
		t.Fatalf("a posted file to a closed form: %v", err)
	}
	if ids, err := r.st.ExpiredUploads(context.Background(), r.clock.Now().Add(48*time.Hour), 10); err != nil || len(ids) != 0 {
		t.Fatalf("the closed form's file was recorded: %v %v", ids, err)
	}
	if marks, _ := os.ReadDir(filepath.Join(r.dir, PostedDir)); len(marks) != 0 {
		t.Fatalf("the closed form's file was kept: %v", marks)
	}
}
