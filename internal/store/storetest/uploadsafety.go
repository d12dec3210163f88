package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// testUploadHold: a held upload outlives its first expiry, an expiry
// never shortens, and a deleted upload cannot be held.
func testUploadHold(t *testing.T, s UploadStore) {
	u := newUpload(t, s, "f", true)
	claimed := newUpload(t, s, "f", true)
	mustApply(t, s, withUploads("f", "a", 1, claimed.ID))
	day := u.ExpiresAt
	if ok, err := s.HoldUpload(ctxT(t), u.ID, day.Add(24*time.Hour)); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	if ok, err := s.HoldUpload(ctxT(t), u.ID, day.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("hold to an earlier time: %v %v", ok, err)
	}
	if got := mustUpload(t, s, u.ID); !got.ExpiresAt.Equal(day.Add(24 * time.Hour)) {
		t.Fatalf("expiry %v after the holds, want %v", got.ExpiresAt, day.Add(24*time.Hour))
	}
	if ids, err := s.ExpiredUploads(ctxT(t), day.Add(time.Hour), 10); err != nil || slices.Contains(ids, u.ID) {
		t.Fatalf("a held upload listed as expired: %v %v", ids, err)
	}
	if ok, err := s.ExpireUpload(ctxT(t), u.ID, day.Add(time.Hour)); err != nil || ok {
		t.Fatalf("expiring a held upload before its new expiry: %v %v", ok, err)
	}
	if ok, err := s.ExpireUpload(ctxT(t), claimed.ID, day.Add(48*time.Hour)); err != nil || ok {
		t.Fatalf("expiring a claimed upload: %v %v", ok, err)
	}
	if ok, err := s.ExpireUpload(ctxT(t), u.ID, day.Add(24*time.Hour)); err != nil || !ok {
		t.Fatalf("expiring at its expiry: %v %v", ok, err)
	}
	if _, err := s.Upload(ctxT(t), u.ID); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("expired upload still there: %v", err)
	}
	if ok, err := s.HoldUpload(ctxT(t), u.ID, day.Add(72*time.Hour)); err != nil || ok {
		t.Fatalf("holding an expired, deleted upload: %v %v", ok, err)
	}
}

// testUploadStates: every upload listed once in id order, page by page,
// with its completion, claim and erasure.
func testUploadStates(t *testing.T, s UploadStore) {
	open := newUpload(t, s, "f", false)
	kept, erased := newUpload(t, s, "f", true), newUpload(t, s, "f", true)
	keep, gone := withUploads("f", "a", 1, kept.ID), withUploads("f", "b", 2, erased.ID)
	mustApply(t, s, keep, gone)
	if _, err := s.EraseEntries(ctxT(t), []string{gone.ID}, nil); err != nil {
		t.Fatal(err)
	}
	var got []store.UploadState
	after := ""
	for {
		page, err := s.UploadStates(ctxT(t), after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 {
			t.Fatalf("page of %d for a limit of 2", len(page))
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.IsSortedFunc(got, func(a, b store.UploadState) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("not in id order: %+v", got)
	}
	want := map[string]store.UploadState{
		open.ID:   {ID: open.ID},
		kept.ID:   {ID: kept.ID, Complete: true, Entry: keep.ID},
		erased.ID: {ID: erased.ID, Complete: true, Entry: gone.ID, Erased: true},
	}
	seen := 0
	for _, u := range got {
		if w, ok := want[u.ID]; ok {
			seen++
			if u != w {
				t.Errorf("upload state %+v, want %+v", u, w)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("listed %d of the %d uploads: %+v", seen, len(want), got)
	}
}
