package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Each fault does what it says: a dropped request never reaches the
// server, a dropped answer does, and clean traffic passes whole over kept-
// alive connections.
func TestProxyFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		faults       Faults
		requests     int
		wantUpstream int64 // requests the server saw; -1: any
		wantOK       int   // answers the client got
		check        func(t *testing.T, s ProxyStats)
	}{
		{name: "clean", requests: 5, wantUpstream: 5, wantOK: 5, check: func(t *testing.T, s ProxyStats) {
			if s.Connections != 1 {
				t.Errorf("%d connections for 5 sequential requests, want 1 kept alive", s.Connections)
			}
		}},
		{name: "drop every request", faults: Faults{DropRequests: 1}, requests: 3, wantUpstream: 0, wantOK: 0,
			check: func(t *testing.T, s ProxyStats) {
				if s.DroppedRequests != 3 {
					t.Errorf("dropped %d requests, want 3", s.DroppedRequests)
				}
			}},
		{name: "drop every answer", faults: Faults{DropResponses: 1}, requests: 3, wantUpstream: 3, wantOK: 0,
			check: func(t *testing.T, s ProxyStats) {
				if s.DroppedResponses != 3 {
					t.Errorf("dropped %d answers, want 3", s.DroppedResponses)
				}
			}},
		{name: "reset everything", faults: Faults{Resets: 1}, requests: 4, wantUpstream: -1, wantOK: 0,
			check: func(t *testing.T, s ProxyStats) {
				if s.Resets != 4 {
					t.Errorf("%d resets, want 4", s.Resets)
				}
			}},
		{name: "hang every drop until the client gives up", faults: Faults{DropRequests: 1, Hang: 1}, requests: 2, wantUpstream: 0, wantOK: 0,
			check: func(t *testing.T, s ProxyStats) {
				if s.Hung != 2 {
					t.Errorf("%d hung, want 2", s.Hung)
				}
			}},
		{name: "latency only", faults: Faults{Latency: time.Millisecond, Jitter: time.Millisecond}, requests: 3, wantUpstream: 3, wantOK: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int64
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seen.Add(1)
				fmt.Fprintf(w, "echo %s %s", r.Header.Get("Idempotency-Key"), b)
			}))
			defer up.Close()
			p, err := StartProxy(strings.TrimPrefix(up.URL, "http://"), tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			ok := 0
			for i := range tc.requests {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.Addr()+"/x", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
				resp, err := hc.Do(req)
				if err == nil {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr == nil && string(b) == fmt.Sprintf(`echo  {"n":%d}`, i) {
						ok++
					}
				}
				cancel()
			}
			if err := p.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if tc.wantUpstream >= 0 && seen.Load() != tc.wantUpstream {
				t.Errorf("server saw %d requests, want %d", seen.Load(), tc.wantUpstream)
			}
			if ok != tc.wantOK {
				t.Errorf("client got %d whole answers, want %d", ok, tc.wantOK)
			}
			if tc.check != nil {
				tc.check(t, p.Stats())
			}
		})
	}
}

// A proxy whose server is gone resets its clients instead of hanging.
func TestProxyServerDown(t *testing.T) {
	t.Parallel()
	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartProxy(addr, Faults{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Post("http://"+p.Addr()+"/x", "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatal("got an answer from a server that is down")
	}
	if got := p.Stats().UpstreamErrors; got != 1 {
		t.Errorf("%d upstream errors, want 1", got)
	}
}
