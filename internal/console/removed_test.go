package console_test

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/server/servertest"
)

// TestTableAndEntryShowRemovedFields: after a definition drops a field,
// the submissions table and the entry page still show the value older
// entries hold, headed as removed.
func TestTableAndEntryShowRemovedFields(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: club\nsite: a\nfields:\n  - {name: name, type: text}\n  - {name: phone, type: phone, region: CN}\n", servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	id := submit(t, h, "club", `{"name":"Ann","phone":"13800138000"}`)
	// The phone removed from a form with entries: confirmed.
	def := "id: club\nsite: a\nfields:\n  - {name: name, type: text}\n  - {name: city, type: text}\n"
	if code, body := adminAPI(t, h, "PUT", "/v1/admin/forms?confirm="+admin.ConfirmToken([]byte(def)), def); code != 200 {
		t.Fatalf("apply: %d %s", code, body)
	}
	for _, path := range []string{"/admin/forms/club/submissions", "/admin/forms/club/entries/" + id} {
		code, body := b.do("GET", path, nil)
		if code != 200 || !strings.Contains(body, "phone (removed)") || !strings.Contains(body, "&#43;8613800138000") {
			t.Errorf("GET %s: %d, want the removed phone and its value:\n%.3000s", path, code, body)
		}
	}
	if _, body := b.do("GET", "/admin/forms/club/submissions?lang=zh", nil); !strings.Contains(body, "phone（已删除）") {
		t.Errorf("the Chinese table does not head the removed field as removed:\n%.3000s", body)
	}
}
