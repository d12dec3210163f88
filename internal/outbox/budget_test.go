package outbox_test

import (
	"context"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/storetest"
)

// lateBudgets is the fixture's store, set once the fixture has made it.
type lateBudgets struct{ store.Budgets }

// TestConfirmationBudgets: confirmations are bounded per address in an
// hour and per form in a minute, by counts in the store; one over a
// budget, or to an address mail cannot reach, is skipped with the reason
// (not failed, not a dead letter, not sent); submitted text never makes
// the subject.
func TestConfirmationBudgets(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	mailer := srv.mailer(t, mail.Address{Name: "Fair", Address: "fair@example.org"})
	clk := storetest.NewClock(time.Date(2027, 3, 1, 9, 0, 10, 0, time.UTC))
	budgets := &lateBudgets{}
	f := newFixture(t, `
id: fair
title: Spring fair
fields:
  - {name: name, type: text}
  - {name: email, type: email}
notify:
  email: {confirm: email}
`, mailer, outbox.Options{Now: clk.Now, Confirmations: outbox.ConfirmBudget{Store: budgets, PerRecipientHour: 2, PerFormMinute: 3}})
	budgets.Budgets = f.st
	ctx := context.Background()
	send := func(want int) {
		t.Helper()
		poll.Until(t, "the mails sent", 15*time.Second, func() bool {
			f.d.FanOutOnce(ctx)
			f.d.SendOnce(ctx)
			m, _ := srv.messages()
			return len(m) == want
		})
	}
	// skipped waits until the entries' confirmations are decided and
	// returns the skipped ones (sends run in parallel: which one of a
	// burst is over the budget is not fixed).
	skipped := func(outs []store.Outcome) []store.Delivery {
		t.Helper()
		var skips []store.Delivery
		poll.Until(t, "the deliveries decided", 15*time.Second, func() bool {
			f.d.FanOutOnce(ctx)
			f.d.SendOnce(ctx)
			skips = nil
			for _, o := range outs {
				ds, _ := f.deliveriesOf(o.ID)
				if len(ds) != 1 || ds[0].State == store.DeliveryPending {
					return false
				}
				if ds[0].State == store.DeliverySkipped {
					skips = append(skips, ds[0])
				}
			}
			return true
		})
		return skips
	}
	spam := `{"name":"CHEAP PILLS at evil.example","email":"ann@example.org"}`
	outs := f.submit("fair", spam, spam, spam)
	send(2)
	if ds := skipped(outs); len(ds) != 1 || !strings.Contains(ds[0].LastError, "this address was sent 2 confirmations") {
		t.Fatalf("three to one address in an hour: skipped %+v, want one", ds)
	}
	msgs, _ := srv.messages()
	for _, m := range msgs {
		if s := subject(m); strings.Contains(s, "PILLS") || strings.Contains(s, "evil") || !strings.Contains(s, "Spring fair") {
			t.Fatalf("subject %q: submitted text in it, or not the form's title", s)
		}
	}
	// The form's minute: two sent, one more goes, the next is skipped.
	outs = f.submit("fair", `{"email":"bo@example.org"}`, `{"email":"cy@example.org"}`)
	send(3)
	if ds := skipped(outs); len(ds) != 1 || !strings.Contains(ds[0].LastError, "this form sent 3 confirmations in this minute") {
		t.Fatalf("the fourth of the form in a minute: skipped %+v, want one", ds)
	}
	// The next minute the form sends again; the address's hour still holds.
	clk.Advance(time.Minute)
	outs = f.submit("fair", `{"email":"di@example.org"}`, spam)
	send(4)
	if ds := skipped(outs); len(ds) != 1 || ds[0].Event.EntryID != outs[1].ID {
		t.Fatalf("ann again within the hour: skipped %+v, want ann's", ds)
	}
	// An address mail cannot reach (taken before formd refused them) is
	// skipped, never sent.
	outs = f.submit("fair", `{"email":"a@[127.0.0.1]"}`)
	if ds := skipped(outs); len(ds) != 1 || !strings.Contains(ds[0].LastError, "address literal") {
		t.Fatalf("an address literal: skipped %+v, want it", ds)
	}
	if _, to := srv.messages(); len(to) != 4 {
		t.Fatalf("sent to %v, want 4 mails", to)
	}
	if st, _ := f.st.DeliveryStats(ctx); st.Pending != 0 || st.Failed != 0 {
		t.Fatalf("outbox after the skips: %+v, want nothing pending or failed", st)
	}
}
