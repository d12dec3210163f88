package storetest

import (
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// The e-mail telling a person their data was erased: the erasure that
// grants their request writes its event, with the address, in its own
// transaction; the address stays only while a delivery is pending.

// withEmail is an entry of form whose data holds addr in the field
// "email" (or, for addr "", a number there).
func withEmail(form, key string, seq uint64, addr string) journal.Entry {
	e := sub(form, key, seq, "p-"+key)
	e.Data = []byte(`{"email":"` + addr + `","name":"N"}`)
	if addr == "" {
		e.Data = []byte(`{"email":42,"name":"N"}`)
	}
	return e
}

// noticeEvents fans out every unfanned event to the endpoints and returns
// the erasure notices among them.
func noticeEvents(t *testing.T, s store.Store, now time.Time, endpoints ...string) []store.Event {
	t.Helper()
	var out []store.Event
	for _, e := range fanOut(t, s, now, endpoints...) {
		if e.Type == store.EventErased {
			out = append(out, e)
		}
	}
	return out
}

// claimMail claims the deliveries to the person's e-mail.
func claimMail(t *testing.T, s store.Store, now time.Time) []store.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(ctxT(t), "o", now, time.Minute, store.ClaimQuery{Limit: 10, Endpoint: "email:confirm"})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// testErasureNotice: only an entry whose pending request the erasure
// grants, of a form named with its field, gets a notice, once; the
// delivery's claim reads the address; once finished it is cleared, and a
// redelivery finds none.
func testErasureNotice(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	putForm(t, s, "g", nil, "")
	asked := mustApply(t, s, withEmail("f", "asked", 1, "ann@example.org"))[0]
	notAsked := mustApply(t, s, withEmail("f", "not-asked", 2, "bo@example.org"))[0]
	otherForm := mustApply(t, s, withEmail("g", "other-form", 3, "cy@example.org"))[0]
	noAddress := mustApply(t, s, withEmail("f", "no-address", 4, ""))[0]
	at := time.Now().UTC().Truncate(time.Microsecond)
	for _, o := range []store.Outcome{asked, otherForm, noAddress} {
		if _, _, err := s.RequestErasure(ctx, o.Form, o.ID, at); err != nil {
			t.Fatal(err)
		}
	}
	fanOut(t, s, at) // the entries' own events
	tell := store.NoticeFields{"f": "email"}
	n, err := s.EraseEntries(ctx, []string{asked.ID, notAsked.ID, otherForm.ID, noAddress.ID}, tell)
	if err != nil || n != 4 {
		t.Fatalf("erase: %d %v, want 4", n, err)
	}
	// Every request is done, whether or not it was told.
	for _, o := range []store.Outcome{asked, otherForm, noAddress} {
		if r, ok, err := s.ErasureRequest(ctx, o.Form, o.ID); err != nil || !ok || r.DoneAt.IsZero() {
			t.Fatalf("request of %s after erasure: %+v %v %v, want done", o.Key, r, ok, err)
		}
	}
	notices := noticeEvents(t, s, at, "email:confirm")
	if len(notices) != 1 || notices[0].EntryID != asked.ID || notices[0].Form != "f" || notices[0].Site != "site" ||
		notices[0].N != 1 || notices[0].Status != store.StatusStored || notices[0].At.IsZero() {
		t.Fatalf("notices %+v, want one, of the entry that asked", notices)
	}
	// An erasure again writes nothing: nothing is left to erase, and the
	// request is done.
	if n, err := s.EraseEntries(ctx, []string{asked.ID}, tell); err != nil || n != 0 {
		t.Fatalf("erase again: %d %v", n, err)
	}
	if again := noticeEvents(t, s, at, "email:confirm"); len(again) != 0 {
		t.Fatalf("a second notice: %+v", again)
	}
	// The entry's history shows it; the event itself carries no address.
	hist, err := s.History(ctx, asked.ID)
	if err != nil || len(hist) != 2 || hist[1].Type != store.EventErased || hist[1].ID() != "evt_"+asked.ID+"_erased" {
		t.Fatalf("history %+v %v", hist, err)
	}
	ds := claimMail(t, s, at)
	if len(ds) != 1 || ds[0].Event.Type != store.EventErased || ds[0].NoticeTo != "ann@example.org" {
		t.Fatalf("claimed %+v, want the notice with its address", ds)
	}
	// A retry keeps the address.
	if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: ds[0].DeliveryKey, Owner: "o", State: store.DeliveryPending, NextAt: at, Counted: true}}, at); err != nil {
		t.Fatal(err)
	}
	ds = claimMail(t, s, at)
	if len(ds) != 1 || ds[0].NoticeTo != "ann@example.org" || ds[0].Attempts != 1 {
		t.Fatalf("claimed for its retry %+v, want the address kept", ds)
	}
	if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: ds[0].DeliveryKey, Owner: "o", State: store.DeliveryDelivered, Counted: true}}, at); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Redeliver(ctx, store.DeliverySelection{Key: &ds[0].DeliveryKey}, at); err != nil || n != 1 {
		t.Fatalf("redeliver: %d %v", n, err)
	}
	if ds := claimMail(t, s, at); len(ds) != 1 || ds[0].NoticeTo != "" {
		t.Fatalf("claimed after delivery %+v, want the address cleared", ds)
	}
	// Retention and erasures without a form named tell no one.
	late := mustApply(t, s, withEmail("f", "late", 5, "dee@example.org"))[0]
	if _, _, err := s.RequestErasure(ctx, "f", late.ID, at); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Erase(ctx, "f", time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("retention: %d %v", n, err)
	}
	if got := noticeEvents(t, s, at, "email:confirm"); len(got) != 0 {
		t.Fatalf("retention told %+v", got)
	}
}

// testErasureNoticeCleared: a notice fanned out to no endpoint, or to one
// switched off, or whose delivery fails for good keeps no address.
func testErasureNoticeCleared(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	at := time.Now().UTC().Truncate(time.Microsecond)
	erase := func(key string, seq uint64) store.Outcome {
		t.Helper()
		o := mustApply(t, s, withEmail("f", key, seq, key+"@example.org"))[0]
		if _, _, err := s.RequestErasure(ctx, "f", o.ID, at); err != nil {
			t.Fatal(err)
		}
		fanOut(t, s, at)
		if n, err := s.EraseEntries(ctx, []string{o.ID}, store.NoticeFields{"f": "email"}); err != nil || n != 1 {
			t.Fatalf("erase %s: %d %v", key, n, err)
		}
		return o
	}
	// How to see an address is kept: a delivery of the event, made
	// pending again, is claimed with it.
	addressOf := func(seq uint64) string {
		t.Helper()
		k := store.DeliveryKey{EventSeq: seq, Endpoint: "email:confirm"}
		if _, err := s.Redeliver(ctx, store.DeliverySelection{Key: &k}, at); err != nil {
			t.Fatal(err)
		}
		ds, err := s.ClaimDeliveries(ctx, "check", at, time.Minute, store.ClaimQuery{Limit: 10, Endpoint: "email:confirm"})
		if err != nil || len(ds) != 1 {
			t.Fatalf("claim %+v %v", ds, err)
		}
		if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: k, Owner: "check", State: store.DeliverySkipped}}, at); err != nil {
			t.Fatal(err)
		}
		return ds[0].NoticeTo
	}

	// Switched off before the fan-out: the delivery is skipped at once.
	erase("off", 1)
	if err := s.DisableEndpoint(ctx, "email:confirm", "f", "test", at); err != nil {
		t.Fatal(err)
	}
	off := noticeEvents(t, s, at, "email:confirm")
	if err := s.EnableEndpoint(ctx, "email:confirm"); err != nil {
		t.Fatal(err)
	}
	if len(off) != 1 {
		t.Fatalf("notices %+v", off)
	}
	if addr := addressOf(off[0].Seq); addr != "" {
		t.Fatalf("address kept after a skipped fan-out: %q", addr)
	}

	// Switched off while pending.
	erase("pending", 2)
	pending := noticeEvents(t, s, at, "email:confirm")
	if err := s.DisableEndpoint(ctx, "email:confirm", "f", "test", at); err != nil {
		t.Fatal(err)
	}
	if err := s.EnableEndpoint(ctx, "email:confirm"); err != nil {
		t.Fatal(err)
	}
	if addr := addressOf(pending[0].Seq); addr != "" {
		t.Fatalf("address kept after the endpoint was switched off: %q", addr)
	}

	// A dead letter.
	erase("dead", 3)
	dead := noticeEvents(t, s, at, "email:confirm")
	ds := claimMail(t, s, at)
	if len(ds) != 1 || ds[0].NoticeTo != "dead@example.org" {
		t.Fatalf("claimed %+v", ds)
	}
	if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: ds[0].DeliveryKey, Owner: "o", State: store.DeliveryFailed, Counted: true}}, at); err != nil {
		t.Fatal(err)
	}
	if addr := addressOf(dead[0].Seq); addr != "" {
		t.Fatalf("address kept after a dead letter: %q", addr)
	}
}

// RunErasureNoticeKept runs, on a fresh store of the driver's, the case
// the store's interface cannot observe: a notice fanned out to no
// endpoint (its form no longer sends e-mail) keeps no address. held
// counts the events of the store that still hold one, read by the driver
// from its own tables.
func RunErasureNoticeKept(t *testing.T, s store.Store, held func() int) {
	t.Helper()
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	at := time.Now().UTC().Truncate(time.Microsecond)
	o := mustApply(t, s, withEmail("f", "k", 1, "kept@example.org"))[0]
	if _, _, err := s.RequestErasure(ctx, "f", o.ID, at); err != nil {
		t.Fatal(err)
	}
	fanOut(t, s, at)
	if n, err := s.EraseEntries(ctx, []string{o.ID}, store.NoticeFields{"f": "email"}); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if n := held(); n != 1 {
		t.Fatalf("%d events hold an address after the erasure, want its notice", n)
	}
	if got := noticeEvents(t, s, at); len(got) != 1 {
		t.Fatalf("notices %+v", got)
	}
	if n := held(); n != 0 {
		t.Fatalf("%d events hold an address after a fan-out to no endpoint, want none", n)
	}
}
