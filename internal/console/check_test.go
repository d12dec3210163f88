package console_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// TestEditorListsEveryProblem: the editor shows the same list formd forms
// check prints — a value of the wrong type does not hide the others.
func TestEditorListsEveryProblem(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	b.do("GET", "/admin/forms/fair-a/edit", nil)
	bad := "id: fair-a\nsite: a\nfields:\n  - {name: name, type: txt}\ncapacity: two\nrate_limit: {requests: 10, per: 1 minute}\nwhen_full: maybe\n"
	code, body := b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {bad}})
	for _, want := range []string{
		`line 4</a>: <code>name</code>: type &#34;txt&#34; is not valid`,
		`line 5</a>: capacity must be a whole number, got &#34;two&#34;`,
		`line 6</a>: per: &#34;1 minute&#34; is not a duration`,
		`line 7</a>: when_full &#34;maybe&#34; is not valid`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the editor's problems lack %q", want)
		}
	}
	if code != 422 || t.Failed() {
		t.Fatalf("%d %.4000s", code, body)
	}
}
