package webhooks_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/formd/formd/internal/webhooks"
	"golang.org/x/net/dns/dnsmessage"
)

// startDNS runs a real DNS server on 127.0.0.1 that answers each name in
// answers (lower case, no trailing dot) with its address, and NXDOMAIN
// for anything else, and returns a resolver that asks only it. It lets a
// test make an innocent-looking name resolve to any address, as a
// rebinding attacker would, without touching the machine's DNS.
func startDNS(t *testing.T, answers map[string]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if msg, err := dnsAnswer(buf[:n], answers); err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	t.Cleanup(func() {
		_ = pc.Close()
		<-done
	})
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", pc.LocalAddr().String())
		},
	}
}

func dnsAnswer(query []byte, answers map[string]netip.Addr) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	ip, known := answers[strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	res := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET}
	switch {
	case known && q.Type == dnsmessage.TypeA && ip.Is4():
		err = b.AResource(res, dnsmessage.AResource{A: ip.As4()})
	case known && q.Type == dnsmessage.TypeAAAA && ip.Is6():
		err = b.AAAAResource(res, dnsmessage.AAAAResource{AAAA: ip.As16()})
	}
	if err != nil {
		return nil, err
	}
	return b.Finish()
}

// onlyLoopback is the safety net under every sender in these tests: it
// runs after the guard and fails the test if anything but a loopback
// address is about to be dialled, so that no test can reach the network
// even when the guard is broken.
func onlyLoopback(t *testing.T) func(netip.AddrPort) error {
	return func(ap netip.AddrPort) error {
		if !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("about to dial %s: the guard let a non-loopback address through", ap)
			return errors.New("test safety net: only loopback may be dialled")
		}
		return nil
	}
}

// loopbackOnly allows the test servers on 127.0.0.1 and nothing else.
var loopbackOnly = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// newSender returns a sender for the test, closed with it, that resolves
// names with r (nil for the system resolver) and never dials anything but
// loopback.
func newSender(t *testing.T, opts webhooks.Options, r *net.Resolver) *webhooks.Sender {
	t.Helper()
	s := webhooks.NewSender(webhooks.WithTestNetwork(opts, r, onlyLoopback(t)))
	t.Cleanup(s.Close)
	return s
}

// receiver is a test endpoint on 127.0.0.1 that records what it got and
// answers with handle.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []received
	hits int
}

type received struct {
	method string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits++
		rc.got = append(rc.got, received{r.Method, r.Header.Clone(), body})
		rc.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.hits
}

// port is the receiver's port, for URLs that name it by a test name.
func (rc *receiver) port() string {
	return strconv.Itoa(rc.Listener.Addr().(*net.TCPAddr).Port)
}
