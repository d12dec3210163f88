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

// TestDraftMailOnThePage: "E-mail me this link" is offered, with its
// texts in the page's language, only by a drafts form with an e-mail
// field on a server that sends e-mail.
func TestDraftMailOnThePage(t *testing.T) {
	t.Parallel()
	h, mux := muxFor(t, `
id: long
drafts: true
fields: [{name: name, type: text}, {name: email, type: email}]
---
id: noaddr
drafts: true
fields: [{name: name, type: text}]
`)
	const button = "data-formd-draft-mail"
	if page := body(t, get(t, mux, "/f/long", nil)); strings.Contains(page, button) {
		t.Errorf("a server without e-mail offers to e-mail the link")
	}
	h.MailDrafts = true
	for _, c := range []struct{ lang, label, sent string }{
		{"en", ">E-mail me this link</button>", `data-mail-sent="The link was sent to the address in this form."`},
		{"zh-CN", ">将此链接发到我的邮箱</button>", `data-mail-sent="链接已发送到表单中填写的邮箱。"`},
	} {
		page := body(t, get(t, mux, "/f/long", map[string]string{"Accept-Language": c.lang}))
		for _, want := range []string{button, c.label, c.sent, "data-formd-draft-mail-status"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the page has no %q", c.lang, want)
			}
		}
	}
	if page := body(t, get(t, mux, "/f/noaddr", nil)); strings.Contains(page, button) {
		t.Errorf("a form without an e-mail field offers to e-mail the link")
	}
}
