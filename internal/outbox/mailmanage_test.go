package outbox_test

import (
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/ticket"
)

// mailText is every text part of a message, decoded (quoted-printable or
// base64), so that a test finds a link the encoding may have wrapped.
func mailText(t *testing.T, m *mail.Message) string {
	t.Helper()
	raw, _ := io.ReadAll(m.Body)
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(enc string, r io.Reader) string {
		var b []byte
		switch strings.ToLower(enc) {
		case "quoted-printable":
			b, _ = io.ReadAll(quotedprintable.NewReader(r))
		case "base64":
			b, _ = io.ReadAll(base64.NewDecoder(base64.StdEncoding, r))
		default:
			b, _ = io.ReadAll(r)
		}
		return string(b)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return decode(m.Header.Get("Content-Transfer-Encoding"), strings.NewReader(string(raw)))
	}
	var out strings.Builder
	mr := multipart.NewReader(strings.NewReader(string(raw)), params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err != nil {
			break
		}
		out.WriteString(decode(p.Header.Get("Content-Transfer-Encoding"), p))
		out.WriteString("\n")
	}
	return out.String()
}

// TestConfirmationCarriesTheParticipantsLink: the person's confirmation
// holds their link (the one the first answer gives, made absolute with
// the public URL), in the form's language, in the text and HTML parts;
// without a public URL it holds none (a mail cannot carry a relative
// link).
func TestConfirmationCarriesTheParticipantsLink(t *testing.T) {
	t.Parallel()
	hasher := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	for _, c := range []struct {
		lang, public, words string
	}{
		{"en", "https://forms.example.org", "My registration"},
		{"zh", "https://forms.example.org/", "我的报名"},
		{"en", "", ""},
	} {
		t.Run(c.lang+"-"+c.public, func(t *testing.T) {
			t.Parallel()
			srv, f := mailFixture(t, mail.Address{Address: "fair@example.org"}, `
id: fair
title: Fair
fields:
  - {name: email, type: email}
notify:
  email: {confirm: email, lang: `+c.lang+`}
`, outbox.Options{ConsoleURL: c.public, Hasher: hasher})
			outs := f.submit("fair", `{"email":"ann@example.org"}`)
			f.step()
			poll.Until(t, "the confirmation", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 1 })
			msgs, _ := srv.messages()
			body := mailText(t, msgs[0])
			link := "https://forms.example.org" + entrylink.PagePath(entrylink.Token(hasher, "fair", outs[0].ID))
			if c.public == "" {
				if strings.Contains(body, "/e/") {
					t.Fatalf("a link without a public URL:\n%s", body)
				}
				return
			}
			if n := strings.Count(body, link); n < 2 {
				t.Fatalf("the link %s is in %d parts of the mail, want text and HTML:\n%s", link, n, body)
			}
			if !strings.Contains(body, c.words) {
				t.Fatalf("no %q in the mail:\n%s", c.words, body)
			}
		})
	}
}

// TestConfirmationCarriesTheTicket: on a form with check-in, a stored
// entry's confirmation holds its ticket's short code and the link to the
// page with its QR code, in the form's language, in the text and HTML
// parts; a waitlisted entry's holds no ticket.
func TestConfirmationCarriesTheTicket(t *testing.T) {
	t.Parallel()
	hasher := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	for _, c := range []struct{ lang, words string }{{"en", "Your ticket for the door: "}, {"zh", "您的入场签到码："}} {
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			srv, f := mailFixture(t, mail.Address{Address: "fair@example.org"}, `
id: fair
title: Fair
checkin: true
capacity: 1
when_full: waitlist
fields:
  - {name: email, type: email}
notify:
  email: {confirm: email, lang: `+c.lang+`}
`, outbox.Options{ConsoleURL: "https://forms.example.org", Hasher: hasher})
			outs := f.submit("fair", `{"email":"ann@example.org"}`, `{"email":"bo@example.org"}`)
			f.step()
			poll.Until(t, "two confirmations", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 2 })
			msgs, _ := srv.messages()
			bodies := map[string]string{}
			for _, m := range msgs {
				bodies[m.Header.Get("To")] = mailText(t, m)
			}
			stored, waitlisted := bodies["<ann@example.org>"], bodies["<bo@example.org>"]
			code := ticket.Code(hasher, "fair", outs[0].ID)
			link := "https://forms.example.org" + entrylink.PagePath(entrylink.Token(hasher, "fair", outs[0].ID))
			if n := strings.Count(stored, c.words+code); n != 1 {
				t.Errorf("%q with the code %s is in %d parts, want the text's:\n%s", c.words, code, n, stored)
			}
			if n := strings.Count(stored, code); n < 2 {
				t.Errorf("the code %s is in %d parts, want text and HTML:\n%s", code, n, stored)
			}
			if n := strings.Count(stored, link); n < 4 {
				t.Errorf("the link to the QR code's page is %d times in the mail, want the participant's link and the ticket's in text and HTML:\n%s", n, stored)
			}
			if waitlisted == "" || strings.Contains(waitlisted, c.words) || strings.Contains(waitlisted, ticket.Code(hasher, "fair", outs[1].ID)) {
				t.Errorf("a waitlisted entry's confirmation has a ticket (or is missing):\n%s", waitlisted)
			}
		})
	}
}
