package outbox_test

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
)

// TestReviewDecisionMailsThePerson: on a form with review and
// confirmations, the person gets no mail while pending, one when an
// editor approves (saying so, with their link under the public URL) and
// one when an editor declines, in the form's language; a decision
// refused as already made sends nothing more. A form with review but no
// e-mail field queues no delivery for its decisions.
func TestReviewDecisionMailsThePerson(t *testing.T) {
	t.Parallel()
	hasher := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	for _, c := range []struct{ lang, approved, declined string }{
		{"en", "Your entry has been approved by the organizers", "The organizers have not accepted your entry."},
		{"zh", "主办方已通过您的提交", "主办方未通过您的提交。"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			t.Parallel()
			srv, f := mailFixture(t, mail.Address{Address: "crew@example.org"}, `
id: crew
title: Crew
fields:
  - {name: email, type: email, required: true}
review: true
notify:
  email: {confirm: email, lang: `+c.lang+`}
`, outbox.Options{ConsoleURL: "https://forms.example.org", Hasher: hasher})
			ctx := context.Background()
			outs := f.submit("crew", `{"email":"ann@example.org"}`, `{"email":"bo@example.org"}`)
			if outs[0].Status != store.StatusPending {
				t.Fatalf("outcome %+v, want pending", outs[0])
			}
			f.step()
			if ds, _ := f.deliveriesOf(outs[0].ID); len(ds) != 0 {
				t.Fatalf("deliveries while pending: %+v", ds)
			}
			if _, err := f.st.Review(ctx, "crew", outs[0].ID, true); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Review(ctx, "crew", outs[1].ID, false); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Review(ctx, "crew", outs[0].ID, false); !errors.Is(err, store.ErrNotPending) {
				t.Fatalf("declining the approved entry: %v", err)
			}
			f.step()
			poll.Until(t, "two mails", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) >= 2 })
			f.step()
			msgs, _ := srv.messages()
			if len(msgs) != 2 {
				t.Fatalf("%d mails, want one per decision", len(msgs))
			}
			link := "https://forms.example.org" + entrylink.PagePath(entrylink.Token(hasher, "crew", outs[0].ID))
			for _, m := range msgs {
				body := mailText(t, m)
				switch to := m.Header.Get("To"); {
				case strings.Contains(to, "ann@example.org"):
					if !strings.Contains(body, c.approved) || !strings.Contains(body, link) {
						t.Errorf("the approval's mail lacks %q or the link %s:\n%s", c.approved, link, body)
					}
				case strings.Contains(to, "bo@example.org"):
					if !strings.Contains(body, c.declined) || strings.Contains(body, c.approved) {
						t.Errorf("the decline's mail does not say %q plainly:\n%s", c.declined, body)
					}
				default:
					t.Errorf("a mail to %s", to)
				}
			}
		})
	}
	t.Run("no e-mail field", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, `
id: quiet
fields:
  - {name: name, type: text}
review: true
`, nil, outbox.Options{})
		ctx := context.Background()
		outs := f.submit("quiet", `{"name":"Ann"}`)
		if _, err := f.st.Review(ctx, "quiet", outs[0].ID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := f.d.FanOutOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if ds, _ := f.deliveriesOf(outs[0].ID); len(ds) != 0 {
			t.Fatalf("deliveries of a form without e-mail: %+v", ds)
		}
	})
}
