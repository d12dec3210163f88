package email

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
)

// numbered is the confirmation with its own Message-ID, so that each
// message the server takes can be told apart.
func numbered(t *testing.T, i int) Message {
	msg := confirmation(t)
	msg.MessageID = fmt.Sprintf("<evt-%d.confirm@formd>", i)
	return msg
}

// messageIDs counts the messages the server took by Message-ID.
func messageIDs(t *testing.T, got []received) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for _, r := range got {
		msg, err := mail.ReadMessage(bytes.NewReader(r.data))
		if err != nil {
			t.Fatalf("read message: %v", err)
		}
		ids[msg.Header.Get("Message-Id")]++
	}
	return ids
}

// checkOnce fails unless the server took each of n numbered messages
// exactly once.
func checkOnce(t *testing.T, ts *testServer, n int) {
	t.Helper()
	ids := messageIDs(t, ts.received())
	if len(ids) != n {
		t.Errorf("server took %d distinct messages, want %d", len(ids), n)
	}
	for i := range n {
		if c := ids[fmt.Sprintf("<evt-%d.confirm@formd>", i)]; c != 1 {
			t.Errorf("message %d taken %d times, want once", i, c)
		}
	}
}

// TestSendPoolsConnections: many messages go over few connections, and
// the connections open at once never exceed MaxConns however many Sends
// run together.
func TestSendPoolsConnections(t *testing.T) {
	t.Parallel()
	cert, trust := selfSigned(t)
	cases := []struct {
		name     string
		o        serverOptions
		maxConns int
		senders  int
		each     int
	}{
		{name: "one after another", maxConns: 4, senders: 1, each: 30},
		{name: "STARTTLS and AUTH, one after another", o: serverOptions{cert: &cert, user: "formd", pass: "pw"}, maxConns: 4, senders: 1, each: 30},
		{name: "40 at once over 3", maxConns: 3, senders: 40, each: 5},
		{name: "smtps, 20 at once over 2", o: serverOptions{cert: &cert, implicit: true}, maxConns: 2, senders: 20, each: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tc.o)
			m := newMailerWith(t, ts.accountConfig(), Options{TLSConfig: trust, MaxConns: tc.maxConns})
			var wg sync.WaitGroup
			errs := make(chan error, tc.senders*tc.each)
			for s := range tc.senders {
				wg.Go(func() {
					for i := range tc.each {
						if err := m.Send(context.Background(), numbered(t, s*tc.each+i)); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("Send: %v", err)
			}
			n := tc.senders * tc.each
			checkOnce(t, ts, n)
			sessions, _, maxOpen := ts.counts()
			want := min(tc.senders, tc.maxConns)
			if sessions > want {
				t.Errorf("%d messages took %d connections, want at most %d", n, sessions, want)
			}
			if maxOpen > tc.maxConns {
				t.Errorf("%d connections open at once, want at most MaxConns %d", maxOpen, tc.maxConns)
			}
			for _, r := range ts.received() {
				if r.user != tc.o.user || r.tls != (tc.o.cert != nil) {
					t.Errorf("a message came as %q (TLS %v)", r.user, r.tls)
				}
			}
		})
	}
}

// TestSendReplacesDroppedConnections: a pooled connection the server
// closed is replaced without the caller seeing an error, and no message
// is lost or taken twice.
func TestSendReplacesDroppedConnections(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    serverOptions
		// between runs before each Send but the first.
		between func(ts *testServer)
		n       int
		// sessions is how many connections the server should have seen.
		sessions int
	}{
		{name: "server closes after 3 messages", o: serverOptions{dropAt: func(sent int) bool { return sent == 3 }}, n: 10, sessions: 4},
		{name: "server restarts between messages", between: (*testServer).dropAll, n: 5, sessions: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tc.o)
			m := newMailerWith(t, ts.config("", ""), Options{MaxConns: 1})
			for i := range tc.n {
				if i > 0 && tc.between != nil {
					tc.between(ts)
					poll.Until(t, "server's connections closed", 10*time.Second, func() bool { _, open, _ := ts.counts(); return open == 0 })
				}
				if err := m.Send(context.Background(), numbered(t, i)); err != nil {
					t.Fatalf("Send %d: %v", i, err)
				}
			}
			checkOnce(t, ts, tc.n)
			if sessions, _, _ := ts.counts(); sessions != tc.sessions {
				t.Errorf("server saw %d connections, want %d", sessions, tc.sessions)
			}
		})
	}
}

// TestSendDropAfterContent: a connection lost once the message went out
// but before the server answered is a transient error the outbox retries
// (at least once), not retried inside Send, and the next Send opens a new
// connection.
func TestSendDropAfterContent(t *testing.T) {
	t.Parallel()
	var drop atomic.Bool
	ts := startServer(t, serverOptions{dropInData: drop.Load})
	m := newMailerWith(t, ts.config("", ""), Options{MaxConns: 1})
	if err := m.Send(context.Background(), numbered(t, 0)); err != nil {
		t.Fatalf("first Send: %v", err)
	}
	drop.Store(true)
	err := m.Send(context.Background(), numbered(t, 1))
	var e *Error
	if !errors.As(err, &e) || IsPermanent(err) {
		t.Fatalf("Send with the answer lost = %v, want a transient *Error", err)
	}
	if sessions, _, _ := ts.counts(); sessions != 1 {
		t.Errorf("Send retried on %d connections, want none", sessions-1)
	}
	drop.Store(false)
	if err := m.Send(context.Background(), numbered(t, 2)); err != nil {
		t.Fatalf("Send after the drop: %v", err)
	}
	if sessions, _, _ := ts.counts(); sessions != 2 {
		t.Errorf("server saw %d connections, want 2", sessions)
	}
}

// TestSendWaitsForAConnection: with every connection in use, a Send
// waits, bounded by its ctx.
func TestSendWaitsForAConnection(t *testing.T) {
	t.Parallel()
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	ts := startServer(t, serverOptions{data: func() error {
		held <- struct{}{}
		<-hold
		return nil
	}})
	m := newMailerWith(t, ts.config("", ""), Options{MaxConns: 1})
	first := make(chan error, 1)
	go func() { first <- m.Send(context.Background(), numbered(t, 0)) }()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- m.Send(ctx, numbered(t, 1)) }()
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) || IsPermanent(err) {
		t.Errorf("Send waiting for the one connection = %v, want a transient context.Canceled", err)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Errorf("first Send: %v", err)
	}
	if sessions, _, _ := ts.counts(); sessions != 1 {
		t.Errorf("server saw %d connections, want 1", sessions)
	}
}

// TestIdleConnectionsClosed: a connection unused for IdleTimeout is
// closed (QUIT), and Close closes the rest.
func TestIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	m := newMailerWith(t, ts.config("", ""), Options{IdleTimeout: 50 * time.Millisecond})
	if err := m.Send(context.Background(), numbered(t, 0)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the idle connection closed", 10*time.Second, func() bool { _, open, _ := ts.counts(); return open == 0 })
	if err := m.Send(context.Background(), numbered(t, 1)); err != nil {
		t.Fatalf("Send after the idle close: %v", err)
	}

	ts2 := startServer(t, serverOptions{})
	m2 := newMailerWith(t, ts2.config("", ""), Options{})
	if err := m2.Send(context.Background(), numbered(t, 0)); err != nil {
		t.Fatal(err)
	}
	if _, open, _ := ts2.counts(); open != 1 {
		t.Fatalf("%d connections open after a Send, want the 1 kept", open)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "Close closed the idle connection", 10*time.Second, func() bool { _, open, _ := ts2.counts(); return open == 0 })
}
