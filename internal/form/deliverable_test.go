package form

import (
	"fmt"
	"strings"
	"testing"
)

// TestUndeliverableAddresses: an e-mail field (a confirmation may go to
// it) refuses addresses mail cannot reach on the internet, and takes
// ordinary ones.
func TestUndeliverableAddresses(t *testing.T) {
	t.Parallel()
	f := mustForm(t, "id: a\nfields: [{name: email, type: email, required: true}]\nnotify: {email: {confirm: email}}\n")
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"ann@example.org", true},
		{"Ann.Lee+fair@mail.example.co.uk", true},
		{"李雷@例子.中国", true},
		{"a@[127.0.0.1]", false},
		{"a@[IPv6:::1]", false},
		{"a@127.0.0.1", false},
		{"a@localhost", false},
		{"a@printer.local", false},
		{"a@db.internal", false},
		{"a@x.test", false},
		{"\"a b\"@example.org", false},
		{"a..b@example.org", false},
		{"a@-x.example.org", false},
		{"a@" + strings.Repeat("x", 64) + ".org", false},
	} {
		_, err := f.Validate(map[string]any{"email": tc.addr}, testHasher)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want accepted %v", tc.addr, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), tc.addr) {
			t.Errorf("%s: the error echoes the value: %v", tc.addr, err)
		}
	}
}

// TestOwnerRecipientsBounded: notify.email.to takes at most
// MaxEmailRecipients deliverable addresses.
func TestOwnerRecipientsBounded(t *testing.T) {
	t.Parallel()
	list := func(n int) string {
		var to []string
		for i := range n {
			to = append(to, fmt.Sprintf("owner%d@example.org", i))
		}
		return "[" + strings.Join(to, ", ") + "]"
	}
	for _, tc := range []struct{ to, want string }{
		{list(MaxEmailRecipients), ""},
		{list(MaxEmailRecipients + 1), "notify.email.to lists 21 addresses: at most 20"},
		{list(5000), "notify.email.to lists 5000 addresses: at most 20"},
		{"[ops@localhost]", `"ops@localhost" has no domain`},
		{"['a@[10.0.0.1]']", `"a@[10.0.0.1]" names an address literal`},
	} {
		_, err := Parse([]byte("id: a\nfields: [{name: x, type: text}]\nnotify: {email: {to: "+tc.to+"}}\n"), "test")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.40s: %v, want accepted", tc.to, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.40s: %v, want %q", tc.to, err, tc.want)
		}
	}
}
