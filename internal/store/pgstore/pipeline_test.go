package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// Apply is one transaction though it is one pipelined batch without BEGIN
// and COMMIT: when an entry of the batch fails on its own, the entries
// before it in the batch are not kept either, and the batch decides them
// all once the failing entry is left out.
func TestApplyOneBatchCommitsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t))
	defer s.Close()
	ctx := context.Background()
	if err := s.PutForms(ctx, []form.Record{{ID: "f", Site: "site-a", Source: []byte("id: f")}}); err != nil {
		t.Fatal(err)
	}
	taken := journaltest.NewEntry("f", "taken")
	if _, err := s.Apply(ctx, []journal.Entry{taken}); err != nil {
		t.Fatal(err)
	}
	first, second := journaltest.NewEntry("f", "first"), journaltest.NewEntry("f", "second")
	bad := journaltest.NewEntry("f", "bad")
	bad.ID = taken.ID // its id is another key's: the store refuses it
	_, err := s.Apply(ctx, []journal.Entry{first, bad, second})
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("apply with an entry whose id is taken = %v, want the entry's own error", err)
	}
	for _, key := range []string{"first", "second"} {
		if _, found, err := s.Outcome(ctx, "f", key); err != nil || found {
			t.Fatalf("after the failed batch, %s: found %v, %v; want nothing kept", key, found, err)
		}
	}
	outs, err := s.Apply(ctx, []journal.Entry{first, second})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Key != "first" || outs[1].Key != "second" || outs[0].Replayed || outs[1].Replayed {
		t.Fatalf("the batch again without the bad entry = %+v, want both decided now", outs)
	}
}
