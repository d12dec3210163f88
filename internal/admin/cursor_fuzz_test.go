package admin

import (
	"errors"
	"math"
	"testing"

	"github.com/formd/formd/internal/problem"
)

// FuzzCursors feeds the admin routes' ?before= cursors arbitrary text:
// each is a cursor the stores can hold (a sequence within int64, a
// positive audit id) or an invalid-request, never something that reaches
// the store and fails there as a 500.
func FuzzCursors(f *testing.F) {
	for _, s := range []string{"", "1:e1", "18446744073709551615:e1", "9223372036854775807:x", "-1:x", ":", "99999999999999999999", "0", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := parseCursor(s); err == nil && (c.Seq > math.MaxInt64 || c.ID == "") {
			t.Fatalf("parseCursor(%q) = %+v: beyond what a store holds", s, c)
		}
		n, err := ParseAuditCursor(s)
		var pr *problem.Problem
		switch {
		case err != nil && (!errors.As(err, &pr) || pr.Status != 400):
			t.Fatalf("ParseAuditCursor(%q): %v, want invalid-request", s, err)
		case err == nil && n < 0:
			t.Fatalf("ParseAuditCursor(%q) = %d", s, n)
		}
	})
}
