package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultTimeout bounds each half of a Send (connecting, then the
// message's transaction) when Options.Timeout is zero: long enough
// for a slow provider, short enough that a hung server does not hold an
// outbox worker for minutes.
const DefaultTimeout = 30 * time.Second

// authMechanisms are the SMTP AUTH mechanisms formd uses, best first; the
// first one the server offers is used. PLAIN and LOGIN carry the password
// itself, so go-mail sends them only over TLS or to a loopback server.
var authMechanisms = []gomail.SMTPAuthType{
	gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
	gomail.SMTPAuthPlain, gomail.SMTPAuthLogin, gomail.SMTPAuthCramMD5,
}

// reservedHeaders are the header fields Send writes itself from the
// Message and the Mailer, or that servers write; Message.Headers may not
// set them (nor any Content-* field), so that a caller cannot add a
// recipient or break the MIME structure by accident.
var reservedHeaders = map[string]bool{
	"From": true, "Sender": true, "To": true, "Cc": true, "Bcc": true,
	"Reply-To": true, "Subject": true, "Date": true, "Message-Id": true,
	"Mime-Version": true, "Return-Path": true, "Received": true,
}

// Options tune a Mailer. The zero value suits production.
type Options struct {
	// TLSConfig verifies the server, for STARTTLS and smtps://. Nil means
	// the system's roots, the Config's Host as the server name and TLS 1.2
	// or later; tests pass one that trusts their own certificate. A copy is
	// kept, with ServerName set to the Host when empty.
	TLSConfig *tls.Config
	// Timeout bounds connecting (dial, greeting, EHLO, STARTTLS, AUTH)
	// and then, again, the message's transaction (see DefaultTimeout); the
	// ctx given to Send bounds the whole of it.
	Timeout time.Duration
	// HelloName is the name sent with EHLO; empty means this machine's
	// host name. Some servers refuse a name that does not resolve.
	HelloName string
	// Now is the clock that dates each message; nil means time.Now.
	Now func() time.Time
	// MaxConns bounds the connections open to the server at once, in use
	// or idle (DefaultMaxConns when zero); a Send beyond it waits for one.
	// Providers limit connections per client, often to a few.
	MaxConns int
	// IdleTimeout closes a connection unused that long
	// (DefaultIdleTimeout when zero), before the server's own timeout
	// (RFC 5321 asks servers for 5 minutes; many use less).
	IdleTimeout time.Duration
}

// Defaults of the pool (Options.MaxConns, Options.IdleTimeout).
const (
	DefaultMaxConns    = 8
	DefaultIdleTimeout = 30 * time.Second
)

// Mailer sends messages to one SMTP server as one sender, over a pool
// of SMTP sessions: many messages a connection (RSET between them), at
// most Options.MaxConns connections to the server at once, a connection
// the server closed replaced, idle ones closed after Options.IdleTimeout.
// Under a peak every entry's confirmation is a message, and a connection
// per message (TCP, greeting, EHLO, STARTTLS, AUTH) was most of the cost
// of sending it. It is safe for concurrent use; Close ends its idle
// connections.
type Mailer struct {
	cfg    Config
	from   mail.Address
	opts   Options
	tls    *tls.Config
	client *gomail.Client // the session's settings, shared by every connection
	pool   *pool
}

// NewMailer checks cfg, from and opts once, at start-up, and returns a
// Mailer that sends as from through the server cfg names.
func NewMailer(cfg Config, from mail.Address, opts Options) (*Mailer, error) {
	if cfg.Host == "" || cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("%w --smtp (FORMD_SMTP): no host and port; %s", ErrInvalidSetting, urlExample)
	}
	if _, err := mail.ParseAddress(from.String()); err != nil || from.Address == "" {
		return nil, fmt.Errorf("%w --smtp-from (FORMD_SMTP_FROM): %q is not an e-mail address; %s", ErrInvalidSetting, from.Address, fromExample)
	}
	if strings.ContainsFunc(opts.HelloName, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return nil, fmt.Errorf("new mailer: hello name %q must be a host name without spaces", opts.HelloName)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.TLSConfig != nil {
		tc = opts.TLSConfig.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = cfg.Host
	}
	m := &Mailer{cfg: cfg, from: from, opts: opts, tls: tc, pool: newPool(opts.MaxConns, opts.IdleTimeout)}
	gopts := []gomail.Option{
		gomail.WithPort(cfg.Port),
		gomail.WithTimeout(opts.Timeout),
		gomail.WithTLSConfig(tc),
		gomail.WithDialContextFunc(m.dialContext),
		// No NOOP before each message: a connection the server closed
		// fails at MAIL FROM, before anything of the message is sent, and
		// Send then tries a new one. RSET (go-mail's default) ends each
		// transaction, so that the next message starts clean.
		gomail.WithoutNoop(),
	}
	if cfg.ImplicitTLS {
		// The dial function does TLS; this keeps go-mail from STARTTLS.
		gopts = append(gopts, gomail.WithSSL())
	} else {
		gopts = append(gopts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if opts.HelloName != "" {
		gopts = append(gopts, gomail.WithHELO(opts.HelloName))
	}
	if cfg.Username != "" {
		gopts = append(gopts,
			gomail.WithOpportunisticSMTPAuth(authMechanisms...),
			gomail.WithUsername(cfg.Username),
			gomail.WithPassword(cfg.Password))
	}
	client, err := gomail.NewClient(cfg.Host, gopts...)
	if err != nil {
		return nil, fmt.Errorf("new mailer: %w", err)
	}
	m.client = client
	return m, nil
}

// Close closes the idle connections and those handed back later; a Send
// after Close still works, over a connection of its own.
func (m *Mailer) Close() error {
	m.pool.close()
	return nil
}

// Message is one mail to send. Render gives its Subject, Text and HTML.
type Message struct {
	// To are the recipients, each one address with an optional display
	// name. A recipient the server refuses fails the whole message (none
	// is sent to), so send to addresses that must not hold each other up
	// in separate messages.
	To []string
	// ReplyTo, when set, is the one address replies should go to.
	ReplyTo string
	// Subject is the subject line, in any language: it is encoded as
	// RFC 2047 words when it is not plain ASCII.
	Subject string
	// Text and HTML are the two alternative bodies; at least one is
	// needed, and with both the message is multipart/alternative.
	Text string
	HTML string
	// MessageID identifies the message, with or without its angle
	// brackets, such as <event-id.endpoint@formd>. It is required and must
	// be stable for one event and recipient: delivery is at least once,
	// and a repeated delivery carrying the same Message-ID is recognisable
	// as the same mail (mail clients and servers may even drop it).
	MessageID string
	// Headers are extra header fields, such as X-Formd-Form. The fields
	// Send writes itself (From, To, Subject, Message-ID, Date, the MIME
	// fields, …) are refused. Auto-Submitted: auto-generated is added
	// unless set, so that vacation responders do not answer.
	Headers map[string]string
}

// Send delivers msg, bounded by ctx, over a connection of the Mailer's
// pool: an idle one when there is one, else a new one while fewer than
// Options.MaxConns are open, else it waits (bounded by ctx) for one to be
// handed back. A nil error means the server accepted the message (250
// after DATA); a failure after that point (the RSET that ends the
// transaction) is not reported, because the mail is on its way and
// retrying would send it twice — the connection is dropped instead. Errors
// are *Error: ask IsPermanent whether a retry could help.
//
// A reused connection the server has closed meanwhile (an idle timeout,
// a restart) fails before the server could have taken the message (the
// MAIL FROM, RCPT or DATA command gets no answer); Send then sends once
// more on a new connection, so a pooled connection's death is never the
// caller's error. A connection lost after the message's final dot but
// before the server's answer leaves Send unable to know, and it reports
// a transient error: the outbox's retry may deliver the mail a second
// time, with the same Message-ID (at least once, recorded once).
func (m *Mailer) Send(ctx context.Context, msg Message) error {
	gm, err := m.build(msg)
	if err != nil {
		return &Error{Op: "message", Permanent: true, Err: err}
	}
	if err := m.pool.acquire(ctx); err != nil {
		return &Error{Op: "connect", Err: fmt.Errorf("wait for an smtp connection: %w", err)}
	}
	defer m.pool.release()
	for {
		pc, reused := m.pool.idle(), true
		if pc == nil {
			reused = false
			if pc, err = m.dial(ctx); err != nil {
				return classify(ctx, err)
			}
		}
		// go-smtp honours no ctx: closing the connection when ctx ends
		// makes a cancelled Send return at once rather than at the next
		// timeout.
		stop := context.AfterFunc(ctx, func() { _ = pc.raw.Close() })
		err = m.client.SendWithSMTPClient(pc.smtp, gm)
		cancelled := !stop()
		delivered := err == nil || gm.IsDelivered()
		if err == nil && !cancelled {
			m.pool.put(pc)
			return nil
		}
		pc.close()
		if delivered {
			return nil
		}
		if reused && !cancelled && ctx.Err() == nil && beforeMessage(err) {
			// The server closed this connection while it was idle: nothing
			// of the message reached it. Once more on a fresh connection.
			continue
		}
		return classify(ctx, err)
	}
}

// beforeMessage reports whether a send failed for the connection (no
// SMTP reply) before the message's content went out, so that the server
// cannot have taken it.
func beforeMessage(err error) bool {
	var se *gomail.SendError
	if !errors.As(err, &se) {
		return false
	}
	if se.ErrorCode() != 0 {
		return false // the server answered: its answer stands
	}
	switch se.Reason {
	case gomail.ErrConnCheck, gomail.ErrSMTPMailFrom, gomail.ErrSMTPRcptTo, gomail.ErrSMTPData:
		return true
	}
	return false
}

// dial opens one connection and its SMTP session (greeting, EHLO,
// STARTTLS, AUTH), bounded by ctx and Options.Timeout.
func (m *Mailer) dial(ctx context.Context) (*pooledConn, error) {
	pc := &pooledConn{}
	dctx := context.WithValue(ctx, dialKey{}, &dialState{ctx: ctx, pc: pc})
	sc, err := m.client.DialToSMTPClientWithContext(dctx)
	if pc.stop != nil {
		pc.stop()
	}
	if err != nil {
		if pc.raw != nil {
			_ = pc.raw.Close()
		}
		return nil, err
	}
	pc.smtp = sc
	return pc, nil
}

// dialKey carries a dialState through go-mail to dialContext.
type dialKey struct{}

type dialState struct {
	ctx context.Context // the Send's ctx, which outlives go-mail's dial ctx
	pc  *pooledConn
}

// dialContext is go-mail's dial function: it keeps the raw connection in
// the pooledConn (so that it can be closed whatever go-mail left open),
// closes it when the Send's ctx ends while the session is set up, and
// does implicit TLS itself.
func (m *Mailer) dialContext(dctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(dctx, network, addr)
	if err != nil {
		return nil, err
	}
	if st, ok := dctx.Value(dialKey{}).(*dialState); ok {
		st.pc.raw = c
		st.pc.stop = context.AfterFunc(st.ctx, func() { _ = c.Close() })
	}
	if !m.cfg.ImplicitTLS {
		return c, nil
	}
	tc := tls.Client(c, m.tls)
	if err := tc.HandshakeContext(dctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return tc, nil
}

// classify turns go-mail's error into an *Error: the step, the SMTP reply
// code when there was one, and whether it is permanent.
func classify(ctx context.Context, err error) *Error {
	e := &Error{Op: "connect", Err: err}
	var se *gomail.SendError
	var te *textproto.Error
	switch {
	case errors.As(err, &se):
		e.Op, e.Code, e.Recipient = "send", se.ErrorCode(), se.Reason == gomail.ErrSMTPRcptTo
	case errors.As(err, &te):
		e.Code = te.Code
	}
	e.Permanent = e.Code >= 500 && e.Code <= 599
	if cerr := ctx.Err(); cerr != nil {
		// The network error says "use of closed connection"; the cause is
		// the caller's, and errors.Is(err, context.Canceled) should say so.
		e.Err, e.Permanent = fmt.Errorf("%w: %w", cerr, err), false
	}
	return e
}

// build checks msg and turns it into a go-mail message. Its errors wrap
// ErrInvalidMessage.
func (m *Mailer) build(msg Message) (*gomail.Msg, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidMessage, fmt.Sprintf(format, args...))
	}
	gm := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	gm.FromMailAddress(&m.from)
	if len(msg.To) == 0 {
		return nil, bad("no recipient")
	}
	to := make([]*mail.Address, 0, len(msg.To))
	for _, s := range msg.To {
		a, err := mail.ParseAddress(s)
		if err != nil {
			return nil, bad("recipient %q is not one e-mail address", s)
		}
		to = append(to, a)
	}
	gm.ToMailAddress(to...)
	if msg.ReplyTo != "" {
		a, err := mail.ParseAddress(msg.ReplyTo)
		if err != nil {
			return nil, bad("reply-to %q is not one e-mail address", msg.ReplyTo)
		}
		gm.ReplyToMailAddress(a)
	}
	id, err := messageID(msg.MessageID)
	if err != nil {
		return nil, bad("%v", err)
	}
	gm.SetMessageIDWithValue(id)
	gm.SetDateWithValue(m.opts.Now())
	gm.Subject(oneLine(msg.Subject))
	gm.SetUserAgent("formd")
	gm.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	for k, v := range msg.Headers {
		name := textproto.CanonicalMIMEHeaderKey(k)
		if !validHeaderName(k) || reservedHeaders[name] || strings.HasPrefix(name, "Content-") {
			return nil, bad("header %q cannot be set", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, bad("header %s has a line break", name)
		}
		gm.SetGenHeader(gomail.Header(name), v)
	}
	switch {
	case msg.Text != "" && msg.HTML != "":
		gm.SetBodyString(gomail.TypeTextPlain, msg.Text)
		gm.AddAlternativeString(gomail.TypeTextHTML, msg.HTML)
	case msg.Text != "":
		gm.SetBodyString(gomail.TypeTextPlain, msg.Text)
	case msg.HTML != "":
		gm.SetBodyString(gomail.TypeTextHTML, msg.HTML)
	default:
		return nil, bad("no body: give Text, HTML or both")
	}
	return gm, nil
}

// messageID checks a Message-ID (RFC 5322 msg-id: id-left "@" id-right,
// printable ASCII without spaces or angle brackets) and returns it
// without its brackets, as go-mail adds them.
func messageID(s string) (string, error) {
	id := strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">")
	left, right, ok := strings.Cut(id, "@")
	if !ok || left == "" || right == "" || strings.Contains(right, "@") ||
		strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`<>()[]\",;:`, r) }) {
		return "", fmt.Errorf("message id %q is not like <event-id.endpoint@formd>", s)
	}
	return id, nil
}

// validHeaderName reports whether s is a header field name: printable
// ASCII without a colon (RFC 5322 section 2.2).
func validHeaderName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == ':' })
}
