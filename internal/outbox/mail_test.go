package outbox_test

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/storetest"
)

// smtpServer is a real SMTP server (go-smtp) on 127.0.0.1 that keeps what
// it accepts.
type smtpServer struct {
	addr *net.TCPAddr
	mu   sync.Mutex
	got  []*mail.Message
	to   [][]string
	// refuse is a recipient the server answers 550 (no such mailbox),
	// naming it as many servers do; set it before the first mail.
	refuse string
}

func startSMTP(t *testing.T) *smtpServer {
	t.Helper()
	ss := &smtpServer{}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{ss: ss}, nil }))
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss.addr = l.Addr().(*net.TCPAddr)
	go s.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { s.Close() })
	return ss
}

// mailFixture is a fixture of formsYAML whose mail goes, from the
// address given, to a test SMTP server, which it returns too.
func mailFixture(t *testing.T, from mail.Address, formsYAML string, opts outbox.Options) (*smtpServer, *fixture) {
	t.Helper()
	srv := startSMTP(t)
	return srv, newFixture(t, formsYAML, srv.mailer(t, from), opts)
}

// mailer sends through the server, from the address given.
func (ss *smtpServer) mailer(t *testing.T, from mail.Address) *email.Mailer {
	t.Helper()
	m, err := email.NewMailer(email.Config{Host: "127.0.0.1", Port: ss.addr.Port}, from, email.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (ss *smtpServer) messages() ([]*mail.Message, [][]string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]*mail.Message(nil), ss.got...), append([][]string(nil), ss.to...)
}

type smtpSession struct {
	ss *smtpServer
	to []string
}

func (s *smtpSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.ss.refuse != "" && to == s.ss.refuse {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "<" + to + ">: no such mailbox"}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	m, err := mail.ReadMessage(r)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(m.Body)
	m.Body = strings.NewReader(string(body))
	s.ss.mu.Lock()
	s.ss.got = append(s.ss.got, m)
	s.ss.to = append(s.ss.to, s.to)
	s.ss.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.to = nil }
func (s *smtpSession) Logout() error { return nil }

func subject(m *mail.Message) string {
	s, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	return s
}

// TestEmail: the owner gets a mail per entry, or one digest for a minute
// with more than digest_over; the person gets a confirmation with the
// receipt, in the form's language — all through the outbox.
func TestEmail(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock(time.Date(2027, 3, 1, 9, 0, 10, 0, time.UTC))
	srv, f := mailFixture(t, mail.Address{Name: "Fair", Address: "fair@example.org"}, `
id: fair
title: {en: Spring fair, zh: 春季集市}
fields:
  - {name: name, type: text, label: {en: Name, zh: 姓名}}
  - {name: email, type: email, label: {en: E-mail, zh: 邮箱}}
notify:
  email: {to: [owner@example.org], confirm: email, digest_over: 3, lang: zh}
`, outbox.Options{Now: clk.Now})
	ctx := context.Background()
	f.submit("fair", `{"name":"李雷","email":"lilei@example.org"}`, `{"name":"韩梅梅","email":"hmm@example.org"}`)
	f.step()
	poll.Until(t, "two confirmations", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 2 })
	msgs, to := srv.messages()
	for i, m := range msgs {
		if len(to[i]) != 1 || to[i][0] == "owner@example.org" {
			t.Fatalf("a confirmation went to %v", to[i])
		}
		if !strings.Contains(subject(m), "春季集市") || !strings.HasPrefix(m.Header.Get("Message-Id"), "<evt_") {
			t.Fatalf("confirmation %q %q", subject(m), m.Header.Get("Message-Id"))
		}
	}
	// The owner's mail waits for the end of the minute.
	clk.Advance(time.Minute)
	f.step()
	poll.Until(t, "two owner mails", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 4 })
	msgs, to = srv.messages()
	for i := 2; i < 4; i++ {
		if to[i][0] != "owner@example.org" || !strings.Contains(subject(msgs[i]), "春季集市") {
			t.Fatalf("owner mail to %v: %q", to[i], subject(msgs[i]))
		}
	}
	// A burst: more than digest_over in a minute is one digest.
	var burst []string
	for range 8 {
		burst = append(burst, `{"name":"王","email":"w@example.org"}`)
	}
	f.submit("fair", burst...)
	// A few sends at a time to the SMTP server: the rest wait a moment.
	poll.Until(t, "eight confirmations", 15*time.Second, func() bool {
		f.step()
		clk.Advance(300 * time.Millisecond)
		m, _ := srv.messages()
		return len(m) == 12
	})
	clk.Advance(time.Minute)
	f.step()
	poll.Until(t, "the digest", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 13 })
	poll.Holds(t, "one digest, nothing more", 100*time.Millisecond, func() bool { m, _ := srv.messages(); return len(m) == 13 })
	msgs, to = srv.messages()
	if len(msgs) != 13 || to[12][0] != "owner@example.org" || !strings.Contains(subject(msgs[12]), "8") {
		t.Fatalf("after the burst: %d mails, last to %v, subject %q", len(msgs), to[len(to)-1], subject(msgs[len(msgs)-1]))
	}
	if st, _ := f.st.DeliveryStats(ctx); st.Pending != 0 || st.Failed != 0 || st.UnfannedEvents != 0 {
		t.Fatalf("outbox after the mails: %+v", st)
	}
}

// TestEmailWaitsWithoutSMTP: with no SMTP server set, e-mail deliveries
// stay pending (in the backlog), never dropped.
func TestEmailWaitsWithoutSMTP(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `
id: fair
fields: [{name: email, type: email}]
notify:
  email: {confirm: email}
`, nil, outbox.Options{})
	ctx := context.Background()
	outs := f.submit("fair", `{"email":"ann@example.org"}`)
	f.d.FanOutOnce(ctx)
	f.d.SendOnce(ctx)
	poll.Until(t, "the deferral", 15*time.Second, func() bool {
		ds, _ := f.deliveriesOf(outs[0].ID)
		return len(ds) == 1 && strings.Contains(ds[0].LastError, "--smtp")
	})
	ds, as := f.deliveriesOf(outs[0].ID)
	if ds[0].State != store.DeliveryPending || ds[0].Attempts != 0 || len(as) != 0 {
		t.Fatalf("without SMTP: %+v %+v", ds, as)
	}
}

// TestOnePersonStopsNoOnesMail: ten entries without the optional
// confirmation address and one whose address the server refuses (550),
// then a hundred normal ones. The confirmations without an address are
// skipped, not dead letters; the refused one fails alone; neither counts
// against the SMTP server's breaker, so every normal confirmation and the
// owner's digest arrive, and the outbox counts one failure.
func TestOnePersonStopsNoOnesMail(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	srv.refuse = "bad@example.org"
	mailer := srv.mailer(t, mail.Address{Name: "Fair", Address: "fair@example.org"})
	clk := storetest.NewClock(time.Date(2027, 3, 1, 9, 0, 10, 0, time.UTC))
	f := newFixture(t, `
id: fair
title: Spring fair
fields:
  - {name: name, type: text}
  - {name: email, type: email, required: false}
notify:
  email: {to: [owner@example.org], confirm: email, digest_over: 10}
`, mailer, outbox.Options{Now: clk.Now})
	var data []string
	for i := range 10 {
		data = append(data, fmt.Sprintf(`{"name":"no address %d"}`, i))
	}
	data = append(data, `{"name":"refused","email":"bad@example.org"}`)
	for i := range 100 {
		data = append(data, fmt.Sprintf(`{"name":"p%d","email":"p%d@example.org"}`, i, i))
	}
	outs := f.submit("fair", data...)
	// A minute and a few seconds: the owner's mail leaves at the end of
	// its minute; nothing else should need longer.
	for range 70 {
		f.drive()
		clk.Advance(time.Second)
	}
	f.drive()
	msgs, to := srv.messages()
	confirmations, digests := 0, 0
	for i := range msgs {
		switch {
		case len(to[i]) == 1 && to[i][0] == "owner@example.org":
			digests++
		case len(to[i]) == 1 && strings.HasSuffix(to[i][0], "@example.org"):
			confirmations++
		}
	}
	if confirmations != 100 || digests != 1 {
		t.Fatalf("%d confirmations and %d mails to the owner arrived, want 100 and one digest", confirmations, digests)
	}
	st, err := f.st.DeliveryStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 1 || st.Pending != 0 {
		t.Fatalf("outbox %+v: want the one refusal failed and nothing pending", st)
	}
	for _, o := range outs[:10] {
		ds, as := f.deliveriesOf(o.ID)
		for _, d := range ds {
			if d.Endpoint == "email:confirm" && (d.State != store.DeliverySkipped || len(as) == 0) {
				t.Fatalf("a confirmation without an address: %+v %+v, want skipped", d, as)
			}
		}
	}
}
