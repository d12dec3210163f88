package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// UploadStore is a store driver with its uploads.
type UploadStore interface {
	store.Store
	store.Uploads
}

// UploadOpener is Opener for a driver's uploads.
type UploadOpener func(t *testing.T, now func() time.Time) func() UploadStore

// RunUploads runs the rules of uploads and their claims (package store:
// an upload belongs to at most one entry, claimed in the entry's
// decision).
func RunUploads(t *testing.T, newStore UploadOpener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, UploadStore)
	}{
		{"ClaimedOnceByItsEntry", testUploadClaim},
		{"RefusedUploads", testUploadRefused},
		{"RefusalGivesBackClaims", testUploadGiveBack},
		{"ConcurrentClaimsOneWins", testUploadConcurrent},
		{"ExpiryLeavesClaimed", testUploadExpiry},
		{"ErasedEntriesLetTheirFilesGo", testUploadErased},
		{"HeldUploadsOutliveTheirExpiry", testUploadHold},
		{"StatesForTheAudit", testUploadStates},
		{"DecisionChecksEachUpload", testUploadChecked},
		{"DecisionRecordsPostedFiles", testPostedRecordedByDecision},
		{"DecisionSpendsTheChallenge", testChallengeSpentByDecision},
		{"Budgets", testUploadBudgets},
		{"ErasedFilesNotListedAtOnce", testUploadErasedAtOnce},
		{"DeletionsQueuedWithTheRecord", testUploadDeletions},
		{"PurgeAFormWithEverything", testFormPurge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, nil)()
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
}

var uploadSeq sync.Mutex

// newUpload records an upload of form f, field photo, complete unless
// told, expiring in a day.
func newUpload(t *testing.T, s UploadStore, f string, complete bool) store.Upload {
	t.Helper()
	uploadSeq.Lock()
	id := fmt.Sprintf("u%d", idSeq.Add(1))
	uploadSeq.Unlock()
	now := time.Now().UTC().Truncate(time.Microsecond)
	u := store.Upload{ID: id, Form: f, Field: "photo", Size: 5, Name: "photo.jpg", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if err := s.CreateUpload(ctxT(t), u); err != nil {
		t.Fatalf("create upload: %v", err)
	}
	if complete {
		u.SHA256, u.Type, u.Complete = sha256.Sum256([]byte("bytes")), "image/jpeg", true
		if err := s.CompleteUpload(ctxT(t), id, u.SHA256, u.Type); err != nil {
			t.Fatalf("complete upload: %v", err)
		}
	}
	return u
}

// withUploads is a submission whose data names the uploads, as
// form.Validate writes it.
func withUploads(form, key string, seq uint64, ids ...string) journal.Entry {
	e := sub(form, key, seq)
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = `"` + id + `"`
	}
	e.Data = []byte(`{"photo":"upload:` + ids[0] + `","_uploads":[` + strings.Join(refs, ",") + `]}`)
	return e
}

func mustUpload(t *testing.T, s UploadStore, id string) store.Upload {
	t.Helper()
	u, err := s.Upload(ctxT(t), id)
	if err != nil {
		t.Fatalf("read upload %s: %v", id, err)
	}
	return u
}

func testUploadClaim(t *testing.T, s UploadStore) {
	u := newUpload(t, s, "f", true)
	got := mustUpload(t, s, u.ID)
	if !got.Complete || got.SHA256 != u.SHA256 || got.Type != "image/jpeg" || got.Name != "photo.jpg" || got.Size != 5 || got.Entry != "" ||
		!got.CreatedAt.Equal(u.CreatedAt) || !got.ExpiresAt.Equal(u.ExpiresAt) {
		t.Fatalf("recorded upload %+v, want %+v unclaimed", got, u)
	}
	first := withUploads("f", "a", 1, u.ID)
	o := mustApply(t, s, first)[0]
	if o.Status != store.StatusStored {
		t.Fatalf("entry naming a complete upload: %+v", o)
	}
	if got := mustUpload(t, s, u.ID); got.Entry != first.ID {
		t.Fatalf("upload claimed by %q, want %q", got.Entry, first.ID)
	}
	// A retry of the key is its first outcome, with the same claim.
	again := first
	again.ID = first.ID + "-retry"
	if o := mustApply(t, s, again)[0]; !o.Replayed || o.Status != store.StatusStored || o.ID != first.ID {
		t.Fatalf("retry of the key: %+v", o)
	}
	files, err := s.EntryUploads(ctxT(t), first.ID)
	if err != nil || len(files) != 1 || files[0].ID != u.ID || files[0].SHA256 != u.SHA256 {
		t.Fatalf("entry uploads %+v, %v", files, err)
	}
	// Another entry naming it is refused, and so is every retry of that.
	other := withUploads("f", "b", 2, u.ID)
	for range 2 {
		if o := mustApply(t, s, other)[0]; o.Status != store.StatusUploadUsed || o.Decision != store.StatusUploadUsed {
			t.Fatalf("second entry naming a claimed upload: %+v", o)
		}
	}
	if got := mustUpload(t, s, u.ID); got.Entry != first.ID {
		t.Fatalf("upload claimed by %q after a second entry, want %q", got.Entry, first.ID)
	}
	// An upload listed twice by one entry is claimed once.
	twice := newUpload(t, s, "f", true)
	if o := mustApply(t, s, withUploads("f", "c", 3, twice.ID, twice.ID))[0]; o.Status != store.StatusStored {
		t.Fatalf("an upload listed twice: %+v", o)
	}
	// Spam is kept as evidence, with its files.
	spamUp := newUpload(t, s, "f", true)
	spam := withUploads("f", "d", 4, spamUp.ID)
	spam.Spam = true
	if o := mustApply(t, s, spam)[0]; o.Status != store.StatusSpam || mustUpload(t, s, spamUp.ID).Entry != spam.ID {
		t.Fatalf("spam naming an upload: %+v", o)
	}
}

func testUploadRefused(t *testing.T, s UploadStore) {
	putForm(t, s, "f", intp(1), store.StatusRejected)
	incomplete := newUpload(t, s, "f", false)
	otherForm := newUpload(t, s, "g", true)
	for name, e := range map[string]journal.Entry{
		"incomplete":      withUploads("f", "a", 1, incomplete.ID),
		"of another form": withUploads("f", "b", 2, otherForm.ID),
		"unknown":         withUploads("f", "c", 3, "no-such-upload"),
	} {
		if o := mustApply(t, s, e)[0]; o.Status != store.StatusUploadMissing {
			t.Errorf("%s upload: %+v, want %s", name, o, store.StatusUploadMissing)
		}
	}
	if got := mustUpload(t, s, otherForm.ID); got.Entry != "" {
		t.Fatalf("an upload of another form was claimed by %s", got.Entry)
	}
	if _, err := s.Upload(ctxT(t), "no-such-upload"); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("unknown upload: %v", err)
	}
	if err := s.CompleteUpload(ctxT(t), "no-such-upload", [32]byte{}, "x/y"); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("completing an unknown upload: %v", err)
	}
	// None of them took the one place, or made an event.
	ok := newUpload(t, s, "f", true)
	if o := mustApply(t, s, withUploads("f", "d", 4, ok.ID))[0]; o.Status != store.StatusStored {
		t.Fatalf("the one place after refused entries: %+v", o)
	}
}

func testUploadGiveBack(t *testing.T, s UploadStore) {
	taken, free := newUpload(t, s, "f", true), newUpload(t, s, "f", true)
	mustApply(t, s, withUploads("f", "a", 1, taken.ID))
	if o := mustApply(t, s, withUploads("f", "b", 2, free.ID, taken.ID))[0]; o.Status != store.StatusUploadUsed {
		t.Fatalf("entry naming a free and a taken upload: %+v", o)
	}
	if got := mustUpload(t, s, free.ID); got.Entry != "" {
		t.Fatalf("the free upload stayed claimed by a refused entry %s", got.Entry)
	}
	if o := mustApply(t, s, withUploads("f", "c", 3, free.ID))[0]; o.Status != store.StatusStored {
		t.Fatalf("the free upload afterwards: %+v", o)
	}
}

func testUploadConcurrent(t *testing.T, s UploadStore) {
	const n = 8
	u := newUpload(t, s, "f", true)
	outs := make([]store.Outcome, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			out, err := s.Apply(ctxT(t), []journal.Entry{withUploads("f", fmt.Sprintf("k%d", i), uint64(i+1), u.ID)})
			if err != nil {
				errs <- err
				return
			}
			outs[i] = out[0]
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	stored, used := 0, 0
	for _, o := range outs {
		switch o.Status {
		case store.StatusStored:
			stored++
			if got := mustUpload(t, s, u.ID); got.Entry != o.ID {
				t.Fatalf("upload claimed by %s, stored entry is %s", got.Entry, o.ID)
			}
		case store.StatusUploadUsed:
			used++
		}
	}
	if stored != 1 || used != n-1 {
		t.Fatalf("%d stored and %d refused of %d entries naming one upload: %v", stored, used, n, statuses(outs))
	}
}

func testUploadExpiry(t *testing.T, s UploadStore) {
	claimed, unclaimed := newUpload(t, s, "f", true), newUpload(t, s, "f", false)
	mustApply(t, s, withUploads("f", "a", 1, claimed.ID))
	if ids, err := s.ExpiredUploads(ctxT(t), time.Now(), 10); err != nil || len(ids) != 0 {
		t.Fatalf("expired before their time: %v, %v", ids, err)
	}
	later := time.Now().Add(25 * time.Hour)
	ids, err := s.ExpiredUploads(ctxT(t), later, 10)
	if err != nil || len(ids) != 1 || ids[0] != unclaimed.ID {
		t.Fatalf("expired uploads %v, %v; want only the unclaimed %s", ids, err, unclaimed.ID)
	}
	if ok, err := s.DeleteUpload(ctxT(t), claimed.ID); err != nil || ok {
		t.Fatalf("deleting a claimed upload: %v, %v", ok, err)
	}
	if ok, err := s.DeleteUpload(ctxT(t), unclaimed.ID); err != nil || !ok {
		t.Fatalf("deleting an unclaimed upload: %v, %v", ok, err)
	}
	if _, err := s.Upload(ctxT(t), unclaimed.ID); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("deleted upload still there: %v", err)
	}
	if ids, _ := s.ExpiredUploads(ctxT(t), later, 0); ids != nil {
		t.Fatalf("limit 0 listed %v", ids)
	}
}

func testUploadErased(t *testing.T, s UploadStore) {
	kept, erased := newUpload(t, s, "f", true), newUpload(t, s, "f", true)
	keep, gone := withUploads("f", "a", 1, kept.ID), withUploads("f", "b", 2, erased.ID)
	mustApply(t, s, keep, gone)
	if ids, err := s.ErasedUploads(ctxT(t), 10); err != nil || len(ids) != 0 {
		t.Fatalf("erased uploads before any erasure: %v %v", ids, err)
	}
	if n, err := s.EraseEntries(ctxT(t), []string{gone.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	ids, err := s.ErasedUploads(ctxT(t), 10)
	if err != nil || len(ids) != 1 || ids[0] != erased.ID {
		t.Fatalf("erased uploads %v %v, want %s", ids, err, erased.ID)
	}
	if ok, err := s.DropErasedUpload(ctxT(t), kept.ID); err != nil || ok {
		t.Fatalf("dropping a live entry's upload: %v %v", ok, err)
	}
	if ok, err := s.DropErasedUpload(ctxT(t), erased.ID); err != nil || !ok {
		t.Fatalf("dropping an erased entry's upload: %v %v", ok, err)
	}
	if _, err := s.Upload(ctxT(t), erased.ID); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("an erased entry's upload stays: %v", err)
	}
	if got := mustUpload(t, s, kept.ID); got.Entry != keep.ID {
		t.Fatalf("the live entry's upload: %+v", got)
	}
	if ids, _ := s.ErasedUploads(ctxT(t), 10); len(ids) != 0 {
		t.Fatalf("erased uploads after the drop: %v", ids)
	}
}

// From the moment an erasure commits, its entry's files are marked
// erased (Upload.Erased, which the download link checks) and listed no
// more (EntryUploads), before any pass deletes a byte; another entry's
// files are not touched.
func testUploadErasedAtOnce(t *testing.T, s UploadStore) {
	kept, erased := newUpload(t, s, "f", true), newUpload(t, s, "f", true)
	keep, gone := withUploads("f", "a", 1, kept.ID), withUploads("f", "b", 2, erased.ID)
	mustApply(t, s, keep, gone)
	if got := mustUpload(t, s, erased.ID); got.Erased || got.Entry != gone.ID {
		t.Fatalf("a live entry's upload before the erasure: %+v", got)
	}
	if files, err := s.EntryUploads(ctxT(t), gone.ID); err != nil || len(files) != 1 || files[0].Erased {
		t.Fatalf("a live entry's files: %+v, %v", files, err)
	}
	if n, err := s.EraseEntries(ctxT(t), []string{gone.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if got := mustUpload(t, s, erased.ID); !got.Erased {
		t.Fatalf("an erased entry's upload is not marked erased: %+v", got)
	}
	if files, err := s.EntryUploads(ctxT(t), gone.ID); err != nil || len(files) != 0 {
		t.Fatalf("an erased entry still lists files: %+v, %v", files, err)
	}
	if got := mustUpload(t, s, kept.ID); got.Erased {
		t.Fatalf("another entry's upload marked erased: %+v", got)
	}
	if got := mustUpload(t, s, newUpload(t, s, "f", true).ID); got.Erased {
		t.Fatalf("an unclaimed upload marked erased: %+v", got)
	}
}

// The transaction that removes an upload's record queues its bytes'
// deletion, for an expiry and for an erasure; a failed attempt is
// recorded and puts the deletion behind those not tried; a done one
// leaves the queue.
func testUploadDeletions(t *testing.T, s UploadStore) {
	if ds, err := s.PendingDeletions(ctxT(t), 10); err != nil || len(ds) != 0 {
		t.Fatalf("deletions of a new store: %+v, %v", ds, err)
	}
	expired, held := newUpload(t, s, "f", false), newUpload(t, s, "f", true)
	later := time.Now().Add(25 * time.Hour)
	if ok, err := s.HoldUpload(ctxT(t), held.ID, later.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	if ok, err := s.ExpireUpload(ctxT(t), held.ID, later); err != nil || ok {
		t.Fatalf("expiring a held upload: %v %v", ok, err)
	}
	if ok, err := s.ExpireUpload(ctxT(t), expired.ID, later); err != nil || !ok {
		t.Fatalf("expire: %v %v", ok, err)
	}
	claimed := newUpload(t, s, "f", true)
	e := withUploads("f", "a", 1, claimed.ID)
	mustApply(t, s, e)
	if n, err := s.EraseEntries(ctxT(t), []string{e.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if ok, err := s.DropErasedUpload(ctxT(t), claimed.ID); err != nil || !ok {
		t.Fatalf("drop erased: %v %v", ok, err)
	}
	ids := func() []string {
		t.Helper()
		ds, err := s.PendingDeletions(ctxT(t), 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	if got := ids(); len(got) != 2 || !slices.Contains(got, expired.ID) || !slices.Contains(got, claimed.ID) {
		t.Fatalf("queued deletions %v, want the expired %s and the erased %s (not the held one)", got, expired.ID, claimed.ID)
	}
	// A deletion by hand (tus termination, a refused type) queues too;
	// a claimed upload is not deleted and not queued.
	deleted := newUpload(t, s, "f", true)
	if ok, err := s.DeleteUpload(ctxT(t), deleted.ID); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := s.DeleteUpload(ctxT(t), held.ID); err != nil || !ok {
		t.Fatalf("delete the held one: %v %v", ok, err)
	}
	if got := ids(); len(got) != 4 || !slices.Contains(got, deleted.ID) || !slices.Contains(got, held.ID) {
		t.Fatalf("queued deletions after two deletions by hand: %v", got)
	}
	for _, id := range []string{deleted.ID, held.ID} {
		if err := s.DeletionDone(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.DeletionFailed(ctxT(t), expired.ID, "disk on fire", at); err != nil {
		t.Fatal(err)
	}
	ds, err := s.PendingDeletions(ctxT(t), 10)
	if err != nil || len(ds) != 2 || ds[0].ID != claimed.ID || ds[1].ID != expired.ID {
		t.Fatalf("after a failure, deletions %+v, %v: want the one not tried first", ds, err)
	}
	if f := ds[1]; f.Attempts != 1 || f.LastError != "disk on fire" || !f.TriedAt.Equal(at) || f.QueuedAt.IsZero() {
		t.Fatalf("the failed deletion as recorded: %+v", f)
	}
	if ds[0].Attempts != 0 || ds[0].LastError != "" || !ds[0].TriedAt.IsZero() {
		t.Fatalf("a deletion not tried: %+v", ds[0])
	}
	if ds, _ := s.PendingDeletions(ctxT(t), 1); len(ds) != 1 {
		t.Fatalf("limit 1 listed %d", len(ds))
	}
	for _, id := range []string{expired.ID, claimed.ID} {
		if err := s.DeletionDone(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(); len(got) != 0 {
		t.Fatalf("deletions left after both were done: %v", got)
	}
}
