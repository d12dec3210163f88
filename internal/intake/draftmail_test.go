package intake_test

import (
	"encoding/json"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/server/servertest"
)

// mailServer is a real SMTP server (go-smtp) on 127.0.0.1 that keeps
// what it accepts and refuses one recipient (550).
type mailServer struct {
	port   int
	mu     sync.Mutex
	got    []receivedMail
	refuse string
}

type receivedMail struct {
	to      []string
	subject string
	body    string
}

// sendThrough sets a server's e-mail settings to send through ms, from
// formd@example.org.
func (ms *mailServer) sendThrough(c *config.Config) {
	c.SMTP = &email.Config{Host: "127.0.0.1", Port: ms.port}
	c.SMTPFrom = mail.Address{Address: "formd@example.org"}
}

func startMailServer(t *testing.T, refuse string) *mailServer {
	t.Helper()
	ms := &mailServer{refuse: refuse}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{ms: ms}, nil }))
	s.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms.port = l.Addr().(*net.TCPAddr).Port
	go s.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { s.Close() })
	return ms
}

func (ms *mailServer) messages() []receivedMail {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]receivedMail(nil), ms.got...)
}

type mailSession struct {
	ms *mailServer
	to []string
}

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if to == s.ms.refuse {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	var body io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(m.Body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	s.ms.mu.Lock()
	s.ms.got = append(s.ms.got, receivedMail{to: s.to, subject: subject, body: string(b)})
	s.ms.mu.Unlock()
	return nil
}
func (s *mailSession) Reset()        { s.to = nil }
func (s *mailSession) Logout() error { return nil }

const draftMailForms = `
id: apply
title: {en: Summer school, zh: 暑期学校}
fields:
  - {name: name,  type: text}
  - {name: email, type: email}
drafts: true
`

// TestDraftEmail: the resume link e-mailed through a real SMTP server,
// in the asked language, with the token the request carried; refused
// without an address, with a wrong token, over the per-draft bound, and
// when the SMTP server refuses the address (nothing said sent); and
// 503 on a server without --smtp.
func TestDraftEmail(t *testing.T) {
	t.Parallel()
	ms := startMailServer(t, "nobody@example.org")
	h := servertest.Start(t, draftMailForms, servertest.Options{Config: func(c *config.Config) {
		ms.sendThrough(c)
		c.PublicURL = "https://forms.example.org"
	}})
	c := servertest.Client()
	do := func(r req, wantStatus int, wantCode string) map[string]any {
		t.Helper()
		resp, body := send(t, c, h.URL, r)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != wantStatus || (wantCode != "" && m["code"] != wantCode) {
			t.Fatalf("%s %s: %d %s, want %d %s", r.method, r.path, resp.StatusCode, body, wantStatus, wantCode)
		}
		return m
	}
	save := func(key, body string) string {
		t.Helper()
		m := do(draftReq("PUT", "/v1/forms/apply/drafts/"+key, body, nil), 201, "")
		return m["resume"].(string)
	}
	mailReq := func(key, tok, lang string) req {
		return req{method: "POST", path: "/v1/forms/apply/drafts/" + key + "/email", headers: map[string]string{"Draft-Token": tok, "Accept-Language": lang}}
	}

	// No address typed: nothing is sent.
	tok0 := save("k0", `{"name":"Ann"}`)
	do(mailReq("k0", tok0, "en"), 422, "draft-no-email")

	tok := save("k1", `{"name":"Ann","email":" Ann@Example.org "}`)
	do(mailReq("k1", "not-the-token", "en"), 404, "draft-not-found")
	do(mailReq("k1", tok0, "en"), 404, "draft-not-found")
	if got := ms.messages(); len(got) != 0 {
		t.Fatalf("mail sent for a refused ask: %v", got)
	}

	m := do(mailReq("k1", tok, "zh-CN,zh;q=0.9"), 200, "")
	if m["sent"] != true {
		t.Fatalf("answer: %v", m)
	}
	got := ms.messages()
	link := "https://forms.example.org/f/apply?resume=" + tok
	if len(got) != 1 || len(got[0].to) != 1 || got[0].to[0] != "ann@example.org" || !strings.Contains(got[0].body, link) ||
		!strings.Contains(got[0].subject, "暑期学校") || !strings.Contains(got[0].body, "继续填写") {
		t.Fatalf("received %+v, want one message to ann@example.org in Chinese with %s", got, link)
	}
	do(mailReq("k1", tok, "en"), 200, "")
	if got := ms.messages(); len(got) != 2 || !strings.Contains(got[1].subject, "Summer school") || !strings.Contains(got[1].body, link) {
		t.Fatalf("second message: %+v", got)
	}
	do(mailReq("k1", tok, "en"), 200, "")
	// The fourth ask in the hour is over the draft's bound: not sent.
	do(mailReq("k1", tok, "en"), 429, "draft-email-limited")
	if got := ms.messages(); len(got) != 3 {
		t.Fatalf("%d messages after the bound, want 3", len(got))
	}

	// An address the SMTP server refuses: a clear failure, never "sent".
	tok2 := save("k2", `{"email":"nobody@example.org"}`)
	do(mailReq("k2", tok2, "en"), 502, "draft-email-failed")
	if got := ms.messages(); len(got) != 3 {
		t.Fatalf("%d messages after a refused address, want 3", len(got))
	}

	t.Run("without smtp", func(t *testing.T) {
		t.Parallel()
		h := servertest.Start(t, draftMailForms, servertest.Options{})
		resp, body := send(t, c, h.URL, draftReq("PUT", "/v1/forms/apply/drafts/k1", `{"email":"ann@example.org"}`, nil))
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("save: %d %s", resp.StatusCode, body)
		}
		resp, body = send(t, c, h.URL, mailReq("k1", m["resume"].(string), "en"))
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "email-not-configured") {
			t.Fatalf("without smtp: %d %s", resp.StatusCode, body)
		}
	})
}
