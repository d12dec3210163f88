package hosted

import (
	"net/http"
	"strings"
	"testing"
)

// TestDraftsOnThePage: a form with drafts: true loads drafts.js, marks its
// form for it, carries the drafts' texts in the page's language and says
// honestly that drafts need JavaScript (and that files are not kept in a
// draft, where the form has files); a form without drafts has none of it.
func TestDraftsOnThePage(t *testing.T) {
	t.Parallel()
	_, mux := muxFor(t, `
id: long
drafts: true
fields: [{name: name, type: text}, {name: cv, type: file}]
---
id: short
fields: [{name: name, type: text}]
`)
	for _, c := range []struct{ lang, saved, nojs, files string }{
		{"en", `data-draft-saved="Draft saved at {time}."`, "Saving a draft needs JavaScript", "Files are not kept in a draft"},
		{"zh-CN", `data-draft-saved="草稿已于 {time} 保存。"`, "保存草稿需要 JavaScript", "草稿不保存文件"},
	} {
		page := body(t, get(t, mux, "/f/long", map[string]string{"Accept-Language": c.lang}))
		for _, want := range []string{`data-formd-drafts`, `src="/sdk/drafts.js?v=`, `data-formd-draft-status`, `data-formd-draft-link`, c.saved, "<noscript>", c.nojs, c.files, `data-msg-manage="`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the drafts form's page has no %q", c.lang, want)
			}
		}
	}
	page := body(t, get(t, mux, "/f/short", nil))
	for _, absent := range []string{"data-formd-drafts", "drafts.js", "data-formd-draft-status", "Saving a draft"} {
		if strings.Contains(page, absent) {
			t.Errorf("a form without drafts has %q", absent)
		}
	}
	if res := get(t, mux, "/sdk/drafts.js", nil); res.StatusCode != http.StatusOK {
		t.Errorf("GET /sdk/drafts.js: %s", res.Status)
	}
}
