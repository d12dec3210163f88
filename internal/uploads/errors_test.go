package uploads

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/uploads/tier"
	"github.com/tus/tusd/v2/pkg/handler"
)

// Each sentinel of the uploads maps, wrapped as the tiers and the locks
// wrap it, to its stable code, status and Retry-After: as an HTTP answer
// (problem.From) and as tusd writes it (tier.TusError).
func TestSentinelsMapToTheirProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"storage full", ErrStorageFull, "upload-storage-full", http.StatusInsufficientStorage},
		{"storage unavailable", ErrStorageUnavailable, "upload-unavailable", http.StatusServiceUnavailable},
		{"locks unavailable", ErrLocksUnavailable, "upload-unavailable", http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wrapped := fmt.Errorf("keep upload bytes (bucket b): %w: %w", tc.err, errors.New("the cause"))
			p := problem.From(wrapped)
			if p.Code != tc.code || p.Status != tc.status || p.Detail != tc.err.Error() || p.RetryAfter <= 0 {
				t.Fatalf("problem.From = %+v, want %s %d with Retry-After and the sentinel's message", p, tc.code, tc.status)
			}
			if _, ok := problem.Sentinels()[tc.err.Error()]; !ok {
				t.Fatalf("%q is not a problem.Sentinel", tc.err)
			}
			var he handler.Error
			if !errors.As(tier.TusError(wrapped), &he) {
				t.Fatal("tier.TusError is not a tusd error")
			}
			r := he.HTTPResponse
			if he.ErrorCode != tc.code || r.StatusCode != tc.status || r.Header["Retry-After"] == "" || r.Header["Content-Type"] != "application/problem+json" || r.Body != string(p.Body()) {
				t.Fatalf("tier.TusError = %+v, want the problem document of %s at %d", he, tc.code, tc.status)
			}
		})
	}
}
