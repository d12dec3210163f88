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

// TestErasureMail: the erasure granting a request is told to the person
// in the form's language, once, with a Message-ID of its own; a refusal
// of the address is a dead letter whose records do not name it; an
// erasure with no request, or of a form the store was not told of, is
// told to no one. Neither mail to the person leaves their address in the
// delivery log, which the erasure does not reach.
func TestErasureMail(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t)
	srv.refuse = "gone@example.org"
	mailer := srv.mailer(t, mail.Address{Name: "Fair", Address: "fair@example.org"})
	clk := storetest.NewClock(time.Now().UTC())
	shanghai := time.FixedZone("UTC+8", 8*3600)
	f := newFixture(t, `
id: fair
title: {en: Spring fair, zh: 春季集市}
fields:
  - {name: name, type: text}
  - {name: email, type: email}
notify:
  email: {confirm: email, lang: zh}
`, mailer, outbox.Options{Now: clk.Now, Location: shanghai})
	ctx := context.Background()
	outs := f.submit("fair", `{"name":"李雷","email":"lilei@example.org"}`, `{"name":"X","email":"gone@example.org"}`, `{"name":"Y","email":"y@example.org"}`)
	f.drive()
	poll.Until(t, "the confirmations", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 2 })
	for _, o := range outs[:2] {
		if _, _, err := f.st.RequestErasure(ctx, "fair", o.ID, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// The request of the first two is granted; the third is erased
	// without one.
	if n, err := f.st.EraseEntries(ctx, []string{outs[0].ID, outs[1].ID, outs[2].ID}, store.NoticeFields{"fair": "email"}); err != nil || n != 3 {
		t.Fatalf("erase: %d %v", n, err)
	}
	f.drive()
	poll.Until(t, "the erasure's mail", 15*time.Second, func() bool { m, _ := srv.messages(); return len(m) == 3 })
	msgs, to := srv.messages()
	m := msgs[2]
	body := mailText(t, m)
	// The day of the erasure, as the store recorded it, in the mails'
	// time zone.
	hist, err := f.st.History(ctx, outs[0].ID)
	if err != nil || len(hist) != 2 || hist[1].Type != store.EventErased {
		t.Fatalf("history %+v %v", hist, err)
	}
	day := hist[1].At.In(shanghai).Format("2006年1月2日")
	if len(to[2]) != 1 || to[2][0] != "lilei@example.org" || subject(m) != "春季集市：您的数据已删除" ||
		m.Header.Get("Message-Id") != "<evt_"+outs[0].ID+"_erased.notice@formd>" ||
		!strings.Contains(body, "您在“春季集市”的报名和您的答案已于 "+day+" 删除。") || strings.Contains(body, "李雷") {
		t.Fatalf("the erasure's mail to %v: %q %q\n%s", to[2], subject(m), m.Header.Get("Message-Id"), body)
	}
	// The refused address: a dead letter that keeps no copy of it.
	poll.Until(t, "the refusal recorded", 15*time.Second, func() bool {
		ds, _ := f.deliveriesOf(outs[1].ID)
		for _, d := range ds {
			if d.Event.Type == store.EventErased {
				return d.State == store.DeliveryFailed
			}
		}
		return false
	})
	ds, as := f.deliveriesOf(outs[1].ID)
	for _, d := range ds {
		if strings.Contains(d.LastError, "gone@example.org") {
			t.Errorf("delivery %s keeps the address: %q", d.Event.Type, d.LastError)
		}
		if !strings.Contains(d.LastError, "(the person's address)") {
			t.Errorf("the refusal's error %q does not say what was refused", d.LastError)
		}
	}
	for _, a := range as {
		if strings.Contains(a.Excerpt, "gone@example.org") {
			t.Errorf("an attempt keeps the address: %q", a.Excerpt)
		}
	}
	// Nothing more: the third entry asked nothing.
	f.drive()
	if m, _ := srv.messages(); len(m) != 3 {
		t.Fatalf("%d mails, want 3", len(m))
	}
	if st, _ := f.st.DeliveryStats(ctx); st.Pending != 0 {
		t.Fatalf("outbox %+v", st)
	}
}
