package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// TestOneAuditPerFormPerReader: while a reader's audit of a form runs, a
// second one is job-running (409); another form, another reader, or the
// same once the first has finished are fine.
func TestOneAuditPerFormPerReader(t *testing.T) {
	t.Parallel()
	h := &Handler{Deps: Deps{Now: time.Now}}
	ann := accounts.Principal{AccountID: "acc_a", Email: "ann@example.org", Role: accounts.Viewer, Sites: []string{"a"}, Via: accounts.ViaSession}
	bo := accounts.Principal{AccountID: "acc_b", Email: "bo@example.org", Role: accounts.Viewer, Sites: []string{"a"}, Via: accounts.ViaSession}
	first, err := h.newJob(ann, "audit", journal.Filter{Form: "fair"}, "a")
	if err != nil {
		t.Fatal(err)
	}
	var pr *problem.Problem
	if _, err := h.newJob(ann, "audit", journal.Filter{Form: "fair"}, "a"); !errors.As(err, &pr) || pr.Code != problem.CodeJobRunning || pr.Status != 409 {
		t.Fatalf("a second audit of the form while the first runs: %v, want 409 job-running", err)
	}
	for name, start := range map[string]func() error{
		"another form":   func() error { _, err := h.newJob(ann, "audit", journal.Filter{Form: "other"}, "a"); return err },
		"another reader": func() error { _, err := h.newJob(bo, "audit", journal.Filter{Form: "fair"}, "a"); return err },
		"a replay":       func() error { _, err := h.newJob(ann, "replay", journal.Filter{Form: "fair"}, "a"); return err },
	} {
		if err := start(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	h.finishJob(first.ID, nil, func(*Job) {})
	if _, err := h.newJob(ann, "audit", journal.Filter{Form: "fair"}, "a"); err != nil {
		t.Fatalf("after the first finished: %v", err)
	}
}
