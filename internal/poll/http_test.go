package poll

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilOK(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 || r.URL.Path == "/never" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if msg := run(t, func(tb testing.TB) { UntilOK(tb, "the third answer", time.Second, srv.URL+"/readyz") }); msg != "" || n.Load() != 3 {
		t.Fatalf("a server that comes up: %q after %d requests", msg, n.Load())
	}
	msg := run(t, func(tb testing.TB) { UntilOK(tb, "a server that stays down", 20*time.Millisecond, srv.URL+"/never") })
	if !strings.Contains(msg, "a server that stays down: 503 Service Unavailable") {
		t.Fatalf("message %q", msg)
	}
}
