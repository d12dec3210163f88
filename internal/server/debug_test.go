package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
)

// TestDebugServerStopsWithTheServer: --debug-addr serves pprof while the
// server runs, and is closed by the time Serve returns, its goroutine
// gone (TestMain checks for leaks).
func TestDebugServerStopsWithTheServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := servertest.Start(t, "", servertest.Options{Config: func(c *config.Config) { c.DebugAddr = addr }})
	// Serve starts it, a moment after Start returns.
	poll.UntilOK(t, "the debug server's pprof index", 10*time.Second, "http://"+addr+"/debug/pprof/")
	h.Stop()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("the debug server still takes connections on %s after Serve returned", addr)
	}
}
