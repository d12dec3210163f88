package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

var (
	testFrom = mail.Address{Name: "春季集市", Address: "formd@example.org"}
	testNow  = time.Date(2027, 3, 1, 9, 5, 3, 0, time.FixedZone("", 8*3600))
)

// newMailer makes a Mailer for cfg with a fixed clock and the given TLS
// trust, failing the test on error.
func newMailer(t *testing.T, cfg Config, tc *tls.Config) *Mailer {
	t.Helper()
	return newMailerWith(t, cfg, Options{TLSConfig: tc})
}

// newMailerWith is newMailer with more options; the Mailer's idle
// connections are closed when the test ends.
func newMailerWith(t *testing.T, cfg Config, o Options) *Mailer {
	t.Helper()
	o.Timeout, o.HelloName, o.Now = 5*time.Second, "formd.test", func() time.Time { return testNow }
	m, err := NewMailer(cfg, testFrom, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// confirmation is a real message: a Chinese confirmation whose values
// include markup a stranger typed.
func confirmation(t *testing.T) Message {
	t.Helper()
	subject, text, html, err := Render(Confirmation, "zh-CN", ConfirmationView{
		FormTitle: "春季集市报名", Status: "stored", ReceivedAt: testNow,
		Receipt: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Fields:  []FieldValue{{"姓名", "<script>alert(1)</script>"}, {"场次", []string{"上午", "下午"}}},
	}, testNow.Location())
	if err != nil {
		t.Fatal(err)
	}
	return Message{
		To: []string{"李雷 <lilei@example.org>"}, Subject: subject, Text: text, HTML: html,
		MessageID: "<evt-1.confirm@formd>",
		Headers:   map[string]string{"X-Formd-Form": "spring-fair-2027"},
	}
}

func TestSendDelivers(t *testing.T) {
	t.Parallel()
	cert, trust := selfSigned(t)
	cases := []struct {
		name    string
		o       serverOptions
		trust   *tls.Config
		wantTLS bool
	}{
		{name: "smtp without TLS", o: serverOptions{}},
		{name: "smtp with STARTTLS", o: serverOptions{cert: &cert}, trust: trust, wantTLS: true},
		{name: "STARTTLS and AUTH PLAIN", o: serverOptions{cert: &cert, user: "formd", pass: "p@ss:word"}, trust: trust, wantTLS: true},
		{name: "smtps", o: serverOptions{cert: &cert, implicit: true}, trust: trust, wantTLS: true},
		{name: "smtps and AUTH PLAIN", o: serverOptions{cert: &cert, implicit: true, user: "formd", pass: "secret"}, trust: trust, wantTLS: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tc.o)
			m := newMailer(t, ts.accountConfig(), tc.trust)
			msg := confirmation(t)
			if err := m.Send(context.Background(), msg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := ts.received()
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			r := got[0]
			if r.tls != tc.wantTLS {
				t.Errorf("over TLS = %v, want %v", r.tls, tc.wantTLS)
			}
			if r.user != tc.o.user {
				t.Errorf("authenticated as %q, want %q", r.user, tc.o.user)
			}
			if r.from != "formd@example.org" || len(r.to) != 1 || r.to[0] != "lilei@example.org" {
				t.Errorf("envelope %q → %q", r.from, r.to)
			}
			checkMIME(t, r.data, msg)
		})
	}
}

// checkMIME parses a received message with the standard library only,
// as a mail client would.
func checkMIME(t *testing.T, data []byte, sent Message) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read message: %v", err)
	}
	h := msg.Header
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(h.Get("Subject"))
	if err != nil {
		t.Fatalf("decode subject %q: %v", h.Get("Subject"), err)
	}
	if subject != "春季集市报名：我们已收到您的提交" || subject != sent.Subject {
		t.Errorf("subject %q (raw %q)", subject, h.Get("Subject"))
	}
	if got := h.Get("Message-Id"); got != "<evt-1.confirm@formd>" {
		t.Errorf("Message-ID %q", got)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "春季集市" || from[0].Address != "formd@example.org" {
		t.Errorf("From %q: %v %v", h.Get("From"), from, err)
	}
	to, err := h.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Name != "李雷" || to[0].Address != "lilei@example.org" {
		t.Errorf("To %q: %v %v", h.Get("To"), to, err)
	}
	if date, err := h.Date(); err != nil || !date.Equal(testNow) {
		t.Errorf("Date %q: %v, want %v", h.Get("Date"), err, testNow)
	}
	for k, want := range map[string]string{"Auto-Submitted": "auto-generated", "X-Formd-Form": "spring-fair-2027", "Mime-Version": "1.0"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", h.Get("Content-Type"), err)
	}
	parts := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		pt, pp, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil || !strings.EqualFold(pp["charset"], "utf-8") {
			t.Errorf("part Content-Type %q: %v", p.Header.Get("Content-Type"), err)
		}
		// NextPart decodes quoted-printable itself.
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		parts[pt] = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	if len(parts) != 2 {
		t.Fatalf("parts %v, want text/plain and text/html", keys(parts))
	}
	if parts["text/plain"] != sent.Text {
		t.Errorf("text part differs from what was sent:\n%s", parts["text/plain"])
	}
	if parts["text/html"] != sent.HTML {
		t.Errorf("html part differs from what was sent:\n%s", parts["text/html"])
	}
	html := parts["text/html"]
	if strings.Contains(html, "<script>") || !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("html part does not escape the typed <script>:\n%s", html)
	}
	if !strings.Contains(parts["text/plain"], "姓名：<script>alert(1)</script>") {
		t.Errorf("text part lacks the value as typed:\n%s", parts["text/plain"])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSendFailures(t *testing.T) {
	t.Parallel()
	cert, trust := selfSigned(t)
	_, otherTrust := selfSigned(t)
	cases := []struct {
		name       string
		o          serverOptions
		down       bool // no server at all
		user, pass string
		trust      *tls.Config
		op         string
		code       int
		permanent  bool
		// transport: the server as a whole failed, so that the outbox's
		// circuit breaker counts it; a refused recipient or message does
		// not.
		transport bool
	}{
		{name: "550 to RCPT", o: serverOptions{rcpt: func(string) error {
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
		}}, op: "send", code: 550, permanent: true},
		{name: "451 to RCPT", o: serverOptions{rcpt: func(string) error {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}}, op: "send", code: 451},
		{name: "421 to MAIL FROM", o: serverOptions{mail: func() error {
			return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "shutting down"}
		}}, op: "send", code: 421, transport: true},
		{name: "554 to DATA", o: serverOptions{data: func() error {
			return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "content refused"}
		}}, op: "send", code: 554, permanent: true},
		{name: "452 to DATA", o: serverOptions{data: func() error {
			return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "disk full"}
		}}, op: "send", code: 452, transport: true},
		{name: "wrong password", o: serverOptions{cert: &cert, user: "formd", pass: "right"}, user: "formd", pass: "wrong", trust: trust, op: "connect", code: 535, permanent: true, transport: true},
		{name: "server down", down: true, op: "connect", transport: true},
		// Without TLS the server offers no AUTH; Send does not go on
		// without the authentication it was configured for.
		{name: "password but no TLS offered", o: serverOptions{user: "formd", pass: "secret"}, user: "formd", pass: "secret", op: "connect", transport: true},
		{name: "untrusted certificate", o: serverOptions{cert: &cert}, trust: otherTrust, op: "connect", transport: true},
		{name: "untrusted certificate, smtps", o: serverOptions{cert: &cert, implicit: true}, trust: otherTrust, op: "connect", transport: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Host: "127.0.0.1", Port: freePort(t)}
			var ts *testServer
			if !tc.down {
				ts = startServer(t, tc.o)
				cfg = ts.config(tc.user, tc.pass)
			}
			err := newMailer(t, cfg, tc.trust).Send(context.Background(), confirmation(t))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Send = %v (%T), want an *Error", err, err)
			}
			t.Logf("%v", err)
			if e.Op != tc.op || e.Code != tc.code || e.Permanent != tc.permanent || IsPermanent(err) != tc.permanent {
				t.Errorf("Send = %v: op %q code %d permanent %v, want %q %d %v", err, e.Op, e.Code, e.Permanent, tc.op, tc.code, tc.permanent)
			}
			if IsTransport(err) != tc.transport {
				t.Errorf("IsTransport(%v) = %v, want %v", err, !tc.transport, tc.transport)
			}
			if ts != nil && len(ts.received()) != 0 {
				t.Errorf("server received a message")
			}
			if tc.pass != "" && strings.Contains(err.Error(), tc.pass) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestSendRefusesInvalidMessages(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	m := newMailer(t, ts.config("", ""), nil)
	good := confirmation(t)
	cases := map[string]func(*Message){
		"no recipient":           func(m *Message) { m.To = nil },
		"two addresses in one":   func(m *Message) { m.To = []string{"a@example.org, b@example.org"} },
		"header injection in to": func(m *Message) { m.To = []string{"a@example.org\r\nBcc: b@example.org"} },
		"not an address":         func(m *Message) { m.To = []string{"lilei"} },
		"bad reply-to":           func(m *Message) { m.ReplyTo = "x" },
		"no message id":          func(m *Message) { m.MessageID = "" },
		"message id without @":   func(m *Message) { m.MessageID = "<evt-1>" },
		"message id with space":  func(m *Message) { m.MessageID = "<evt 1@formd>" },
		"no body":                func(m *Message) { m.Text, m.HTML = "", "" },
		"reserved header":        func(m *Message) { m.Headers = map[string]string{"bcc": "x@example.org"} },
		"bad header name":        func(m *Message) { m.Headers = map[string]string{"X Formd": "1"} },
		"content header":         func(m *Message) { m.Headers = map[string]string{"content-disposition": "attachment"} },
		"line break in header":   func(m *Message) { m.Headers = map[string]string{"X-Formd-Form": "a\r\nBcc: x@example.org"} },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := good
			msg.To = append([]string(nil), good.To...)
			change(&msg)
			err := m.Send(context.Background(), msg)
			if !errors.Is(err, ErrInvalidMessage) || !IsPermanent(err) {
				t.Errorf("Send = %v, want a permanent ErrInvalidMessage", err)
			}
		})
	}
	if n := len(ts.received()); n != 0 {
		t.Errorf("server received %d messages", n)
	}
}

// TestSendHonoursContext: a server that accepts the connection and then
// says nothing holds Send only until its ctx ends, not until the timeout.
func TestSendHonoursContext(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	t.Cleanup(func() {
		_ = l.Close()
		for c := range accepted {
			_ = c.Close()
		}
	})
	port := l.Addr().(*net.TCPAddr).Port
	m, err := NewMailer(Config{Host: "127.0.0.1", Port: port}, testFrom, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- m.Send(ctx, confirmation(t)) }()

	var held net.Conn
	select {
	case held = <-accepted:
	case err := <-result:
		t.Fatalf("Send returned %v before the server accepted", err)
	}
	defer func() { _ = held.Close() }()
	cancel()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) || IsPermanent(err) {
			t.Errorf("Send = %v, want a transient error that is context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send still waits 10 s after its ctx was cancelled")
	}
}

func TestNewMailerChecks(t *testing.T) {
	t.Parallel()
	good := Config{Host: "127.0.0.1", Port: 25}
	for name, tc := range map[string]struct {
		cfg  Config
		from mail.Address
		opts Options
	}{
		"no host":         {Config{Port: 25}, testFrom, Options{}},
		"no port":         {Config{Host: "h"}, testFrom, Options{}},
		"no from":         {good, mail.Address{}, Options{}},
		"bad from":        {good, mail.Address{Address: "formd"}, Options{}},
		"bad hello name":  {good, testFrom, Options{HelloName: "a b"}},
		"hello with CRLF": {good, testFrom, Options{HelloName: "a\r\nMAIL FROM:<x@y>"}},
	} {
		if _, err := NewMailer(tc.cfg, tc.from, tc.opts); err == nil {
			t.Errorf("%s: NewMailer = nil error", name)
		}
	}
}

func TestMessageID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"<evt-1.owner@formd>":             "evt-1.owner@formd",
		"evt-1.owner@formd":               "evt-1.owner@formd",
		"<01JQ7Z.confirm@formd.example>":  "01JQ7Z.confirm@formd.example",
		"":                                "",
		"<>":                              "",
		"evt-1":                           "",
		"@formd":                          "",
		"evt@":                            "",
		"a@b@c":                           "",
		"<evt 1@formd>":                   "",
		"<evt-1@formd>\r\nBcc: x@example": "",
		"<évt@formd>":                     "",
	} {
		got, err := messageID(in)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("messageID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
