package accounts

import (
	"errors"
	"testing"
)

// Every role × action × site in and out of scope, against the one table
// of what each role may do.
func TestCan(t *testing.T) {
	t.Parallel()
	actions := []Action{Read, Act, EditForms, Forget, ManageAccounts}
	want := map[Role]map[Action]bool{
		Viewer: {Read: true},
		Editor: {Read: true, Act: true, EditForms: true},
		Owner:  {Read: true, Act: true, EditForms: true, Forget: true, ManageAccounts: true},
	}
	scopes := []struct {
		name  string
		sites []string
		site  string
		in    bool
	}{
		{"own site", []string{"a", "b"}, "b", true},
		{"other site", []string{"a", "b"}, "c", false},
		{"site-less thing, scoped", []string{"a"}, "", false},
		{"every site", []string{AllSites}, "z", true},
		{"site-less thing, every site", []string{AllSites}, "", true},
		{"no sites", nil, "a", false},
		{"* is not a site name", []string{"a"}, AllSites, false},
	}
	for _, role := range []Role{Viewer, Editor, Owner, Role("root"), ""} {
		for _, action := range actions {
			for _, sc := range scopes {
				p := Principal{Role: role, Sites: sc.sites}
				expect := want[role][action] && sc.in
				if got := p.Can(action, sc.site); got != expect {
					t.Errorf("%q %s on %s (%q in %v): %v, want %v", role, action, sc.name, sc.site, sc.sites, got, expect)
				}
			}
		}
	}
}

func TestCanManage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		p     Principal
		sites []string
		want  bool
	}{
		{"owner of a, account of a", Principal{Role: Owner, Sites: []string{"a", "b"}}, []string{"a"}, true},
		{"owner of a, b, account of a and b", Principal{Role: Owner, Sites: []string{"a", "b"}}, []string{"a", "b"}, true},
		{"owner of a, account of a and c", Principal{Role: Owner, Sites: []string{"a", "b"}}, []string{"a", "c"}, false},
		{"owner of a, account of every site", Principal{Role: Owner, Sites: []string{"a"}}, []string{AllSites}, false},
		{"owner of a, account of no site", Principal{Role: Owner, Sites: []string{"a"}}, nil, false},
		{"owner of every site, account of every site", Principal{Role: Owner, Sites: []string{AllSites}}, []string{AllSites}, true},
		{"owner of every site, account of c", Principal{Role: Owner, Sites: []string{AllSites}}, []string{"c"}, true},
		{"editor of every site", Principal{Role: Editor, Sites: []string{AllSites}}, []string{"c"}, false},
		{"viewer of a", Principal{Role: Viewer, Sites: []string{"a"}}, []string{"a"}, false},
	}
	for _, tc := range cases {
		if got := tc.p.CanManage(tc.sites); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseRole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Role{"owner": Owner, " Editor ": Editor, "VIEWER": Viewer} {
		if got, err := ParseRole(in); got != want || err != nil {
			t.Errorf("ParseRole(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "admin", "owners"} {
		if _, err := ParseRole(in); !errors.Is(err, ErrInvalidRole) {
			t.Errorf("ParseRole(%q): %v, want ErrInvalidRole", in, err)
		}
	}
}

func TestPrincipalString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p    Principal
		want string
	}{
		{Principal{AccountID: "acc_1", Email: "a@example.com", Via: ViaSession, CSRFToken: "secret"}, "a@example.com"},
		{Principal{AccountID: "acc_1", Email: "a@example.com", Via: ViaToken, TokenID: "tok_1"}, "a@example.com (token tok_1)"},
		{legacyAdmin(), "admin token"},
		{Operator("formd users add"), "command line (formd users add)"},
	}
	for _, tc := range cases {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
