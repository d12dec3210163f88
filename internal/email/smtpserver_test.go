package email

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// serverOptions shape an in-process SMTP server for one test.
type serverOptions struct {
	// cert, when set, offers STARTTLS with it, or with implicit, serves
	// TLS from the first byte.
	cert     *tls.Certificate
	implicit bool
	// user and pass, when set, are required with AUTH PLAIN before MAIL.
	user, pass string
	// mail, rcpt and data, when set, answer MAIL FROM, RCPT TO and DATA
	// instead of 250.
	mail func() error
	rcpt func(to string) error
	data func() error
	// dropAt, when set, is asked before each MAIL FROM with the number of
	// messages this connection has carried; true closes the connection
	// there (a server's idle timeout or restart, seen by the client).
	dropAt func(sent int) bool
	// dropInData, when set, closes the connection once the message's
	// content is read, before the server's answer (the one case the
	// client cannot know whether the message was taken).
	dropInData func() bool
}

// received is one message the server accepted, with how it came.
type received struct {
	from string
	to   []string
	data []byte
	tls  bool
	user string
}

// testServer is a real SMTP server (github.com/emersion/go-smtp) on
// 127.0.0.1, stopped when the test ends.
type testServer struct {
	host string
	port int
	o    serverOptions

	mu       sync.Mutex
	got      []received
	sessions int // connections opened (a STARTTLS starts a new go-smtp session on the same one)
	remotes  map[string]bool
	open     int // connections open now
	maxOpen  int // most connections open at once
	conns    map[*smtp.Conn]bool
}

func startServer(t *testing.T, o serverOptions) *testServer {
	t.Helper()
	ts := &testServer{o: o}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		ts.mu.Lock()
		if ts.remotes == nil {
			ts.remotes = map[string]bool{}
		}
		if r := c.Conn().RemoteAddr().String(); !ts.remotes[r] {
			ts.remotes[r] = true
			ts.sessions++
		}
		ts.open++
		ts.maxOpen = max(ts.maxOpen, ts.open)
		if ts.conns == nil {
			ts.conns = map[*smtp.Conn]bool{}
		}
		ts.conns[c] = true
		ts.mu.Unlock()
		return &session{ts: ts, c: c}, nil
	}))
	s.Domain = "localhost"
	s.ErrorLog = testLogger{t}
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.cert != nil {
		tc := &tls.Config{Certificates: []tls.Certificate{*o.cert}}
		if o.implicit {
			l = tls.NewListener(l, tc)
		} else {
			s.TLSConfig = tc
		}
	}
	addr := l.Addr().(*net.TCPAddr)
	ts.host, ts.port = addr.IP.String(), addr.Port
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(l); err != nil && !errors.Is(err, smtp.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			t.Errorf("smtp server: %v", err)
		}
	}()
	t.Cleanup(func() {
		// Close ends the listener and any connection left; goleak in
		// TestMain waits for their goroutines to return.
		_ = s.Close()
		<-done
	})
	return ts
}

// config is the Config of a Mailer that sends to this server.
func (ts *testServer) config(user, pass string) Config {
	return Config{Host: ts.host, Port: ts.port, ImplicitTLS: ts.o.implicit, Username: user, Password: pass}
}

// accountConfig is a Config that logs in with the server's account, if
// it has one.
func (ts *testServer) accountConfig() Config { return ts.config(ts.o.user, ts.o.pass) }

func (ts *testServer) received() []received {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]received(nil), ts.got...)
}

// counts are the server's connections: opened in all, open now, most
// open at once.
func (ts *testServer) counts() (sessions, open, maxOpen int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.sessions, ts.open, ts.maxOpen
}

// dropAll closes every open connection, as a server that restarts.
func (ts *testServer) dropAll() {
	ts.mu.Lock()
	conns := make([]*smtp.Conn, 0, len(ts.conns))
	for c := range ts.conns {
		conns = append(conns, c)
	}
	ts.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

type session struct {
	ts   *testServer
	c    *smtp.Conn
	user string
	msg  received
	sent int // messages this connection carried
	gone bool
}

var _ smtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string {
	if s.ts.o.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.ts.o.user || password != s.ts.o.pass {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.ts.o.user != "" && s.user == "" {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	if s.ts.o.dropAt != nil && s.ts.o.dropAt(s.sent) {
		_ = s.c.Close()
		return errors.New("connection dropped")
	}
	if s.ts.o.mail != nil {
		if err := s.ts.o.mail(); err != nil {
			return err
		}
	}
	s.msg = received{from: from}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.ts.o.rcpt != nil {
		if err := s.ts.o.rcpt(to); err != nil {
			return err
		}
	}
	s.msg.to = append(s.msg.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.ts.o.dropInData != nil && s.ts.o.dropInData() {
		_ = s.c.Close()
		return errors.New("connection dropped")
	}
	if s.ts.o.data != nil {
		if err := s.ts.o.data(); err != nil {
			return err
		}
	}
	s.sent++
	_, s.msg.tls = s.c.TLSConnectionState()
	s.msg.data, s.msg.user = b, s.user
	s.ts.mu.Lock()
	s.ts.got = append(s.ts.got, s.msg)
	s.ts.mu.Unlock()
	return nil
}

func (s *session) Reset() { s.msg = received{} }
func (s *session) Logout() error {
	s.ts.mu.Lock()
	defer s.ts.mu.Unlock()
	if !s.gone {
		s.gone = true
		s.ts.open--
		delete(s.ts.conns, s.c)
	}
	return nil
}

// testLogger sends the server's log to the test's.
type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }

// selfSigned makes a certificate for 127.0.0.1 and a client TLS config
// that trusts it, and only it.
func selfSigned(t *testing.T) (tls.Certificate, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "formd test smtp"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// freePort is a port on 127.0.0.1 where nothing listens.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(l.Addr().String())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}
