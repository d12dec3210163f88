package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// TestOneAuditPerAccount is issue 30's finding: a viewer could start an
// audit of every form at once. Each account runs one audit at a time, of
// any form or site; another account, or a finished audit, does not stand
// in the way.
func TestOneAuditPerAccount(t *testing.T) {
	h := &Handler{}
	h.Now = func() time.Time { return time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC) }
	viewer := accounts.Principal{AccountID: "acc_viewer", Role: accounts.Viewer, Via: accounts.ViaSession}
	other := accounts.Principal{AccountID: "acc_other", Role: accounts.Viewer, Via: accounts.ViaSession}
	first, err := h.newJob(viewer, "audit", journal.Filter{Form: "fair-a"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]journal.Filter{"the same form": {Form: "fair-a"}, "another form": {Form: "fair-b"}, "a whole site": {}} {
		var p *problem.Problem
		if _, err := h.newJob(viewer, "audit", f, "a"); !errors.As(err, &p) || p.Code != problem.CodeJobRunning {
			t.Errorf("a second audit by the viewer, of %s: %v", name, err)
		}
	}
	// Through one of its tokens it is the same account.
	token := viewer
	token.Via, token.TokenID = accounts.ViaToken, "tok_1"
	if _, err := h.newJob(token, "audit", journal.Filter{Form: "fair-c"}, ""); err == nil {
		t.Error("a second audit by the viewer through a token")
	}
	if _, err := h.newJob(other, "audit", journal.Filter{Form: "fair-b"}, ""); err != nil {
		t.Fatalf("another account's audit: %v", err)
	}
	h.updateJob(first.ID, func(j *Job) { j.Finished = h.Now() })
	if _, err := h.newJob(viewer, "audit", journal.Filter{Form: "fair-b"}, ""); err != nil {
		t.Fatalf("after the first finished: %v", err)
	}
}
