package sso

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
)

// The first rule whose value the claim holds wins; a claim may be a
// string or a list; a claim no rule names, or none at all, gives nothing.
func TestGrant(t *testing.T) {
	t.Parallel()
	rules, err := ParseRules(" formd-admins = owner : * ; fair-team=editor:fair, expo\nvolunteers=viewer:fair")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		claim any
		role  accounts.Role
		sites string
		ok    bool
	}{
		{[]any{"staff", "fair-team", "formd-admins"}, accounts.Owner, "*", true},
		{[]any{"volunteers", "fair-team"}, accounts.Editor, "fair,expo", true},
		{"volunteers", accounts.Viewer, "fair", true},
		{[]any{"staff"}, "", "", false},
		{nil, "", "", false},
		{42.0, "", "", false},
	} {
		role, sites, ok := Grant(rules, tc.claim)
		if role != tc.role || strings.Join(sites, ",") != tc.sites || ok != tc.ok {
			t.Errorf("claim %v: %s %v %v, want %s %s %v", tc.claim, role, sites, ok, tc.role, tc.sites, tc.ok)
		}
	}
	if rules[0].String() != "formd-admins=owner:*" {
		t.Errorf("rule text %q", rules[0])
	}
}
