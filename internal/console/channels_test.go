package console_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/server/servertest"
)

const dingURL = "https://oapi.dingtalk.com/robot/send?access_token=tok-ding-1234567890"
const slackURL = "https://hooks.slack.com/services/T000/B000/slacktoken123"

// TestChannelsEditor: an owner adds, changes and removes a form's chat
// robots in the console; each save is a published version whose YAML
// reads back as the robots the page showed; an editor and a viewer see
// neither a secret nor a robot's token, and an editor's save keeps both.
func TestChannelsEditor(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	owner := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	const page = "/admin/forms/fair-a/channels"
	code, body := owner.do("GET", page, nil)
	if code != 200 || !strings.Contains(body, "No chat robots yet.") || !strings.Contains(body, "None by default") {
		t.Fatalf("the empty page: %d %s", code, mainOf(body))
	}
	// Add a DingTalk robot with its secret and one field.
	code, body = owner.do("POST", page, url.Values{"op": {"add"}, "kind": {"dingtalk"}, "url": {dingURL}, "secret": {"SECabc123"}, "fields": {"name"}})
	if code != 200 || !strings.Contains(body, "The robot is added and the form published.") || !strings.Contains(body, dingURL) {
		t.Fatalf("add: %d %s", code, mainOf(body))
	}
	f := h.Server.Forms.Get("fair-a")
	if got := f.Def.Notify.DingTalk; len(got) != 1 || got[0].URL != dingURL || got[0].Secret != "SECabc123" || strings.Join(got[0].Fields, ",") != "name" {
		t.Fatalf("the published robot: %+v", got)
	}
	// Add a Slack robot: no fields unless ticked.
	code, body = owner.do("POST", page, url.Values{"op": {"add"}, "kind": {"slack"}, "url": {slackURL}})
	if code != 200 {
		t.Fatalf("add slack: %d %s", code, mainOf(body))
	}
	if got := h.Server.Forms.Get("fair-a").Def.Notify.Slack; len(got) != 1 || len(got[0].Fields) != 0 {
		t.Fatalf("the slack robot: %+v", got)
	}

	// A Slack robot's URL listed as DingTalk is refused on the robot,
	// the platform named, in English and in Chinese; nothing published.
	code, body = owner.do("POST", page, url.Values{"op": {"save"}, "at": {"dingtalk:0"}, "kind": {"dingtalk"}, "url": {slackURL}})
	if code != 422 || !strings.Contains(body, `id="bot1-problems"`) || !strings.Contains(body, "is a Slack robot&#39;s URL") || !strings.Contains(body, "list it under notify.slack") {
		t.Fatalf("wrong platform: %d %s", code, mainOf(body))
	}
	owner.hdr = map[string][]string{"Accept-Language": {"zh-CN"}}
	code, body = owner.do("POST", page, url.Values{"op": {"add"}, "kind": {"feishu"}, "url": {dingURL}})
	owner.hdr = nil
	if code != 422 || !strings.Contains(body, `id="new-problems"`) || !strings.Contains(body, "是 DingTalk (钉钉) 机器人的地址") || !strings.Contains(body, "请放在 notify.dingtalk 下") {
		t.Fatalf("wrong platform in Chinese: %d %s", code, mainOf(body))
	}
	// A secret for a platform that does not sign is refused, not dropped.
	code, body = owner.do("POST", page, url.Values{"op": {"save"}, "at": {"slack:0"}, "kind": {"slack"}, "url": {slackURL}, "secret": {"s3cret"}})
	if code != 422 || !strings.Contains(body, `id="bot0-problems"`) || !strings.Contains(body, "a Slack robot has no secret") {
		t.Fatalf("a Slack secret: %d %s", code, mainOf(body))
	}
	// A loopback address is refused as forms check refuses it.
	code, body = owner.do("POST", page, url.Values{"op": {"add"}, "kind": {"slack"}, "url": {"http://127.0.0.1:9/services/x"}})
	if code != 422 || !strings.Contains(body, `id="new-problems"`) {
		t.Fatalf("loopback: %d %s", code, mainOf(body))
	}
	if n := len(h.Server.Forms.Get("fair-a").Def.Notify.DingTalk); n != 1 || h.Server.Forms.Get("fair-a").Def.Notify.DingTalk[0].URL != dingURL {
		t.Fatalf("a refused save was published: %+v", h.Server.Forms.Get("fair-a").Def.Notify)
	}

	// An editor and a viewer see neither the token nor the secret.
	editor := signIn(t, h, "editor@example.org", accounts.Editor, "a")
	viewer := signIn(t, h, "viewer@example.org", accounts.Viewer, "a")
	for _, b := range []*browser{editor, viewer} {
		code, body = b.do("GET", page, nil)
		if code != 200 || strings.Contains(body, "tok-ding") || strings.Contains(body, "slacktoken") || strings.Contains(body, "SECabc") ||
			!strings.Contains(body, "access_token="+url.QueryEscape(form.HiddenSecret)) && !strings.Contains(body, form.HiddenSecret) {
			t.Fatalf("masked page: %d %s", code, mainOf(body))
		}
	}
	if strings.Contains(body, "Save and publish") {
		t.Fatalf("a viewer gets the editor's controls: %.3000s", body)
	}
	// The editor changes the DingTalk robot's fields, the URL and secret
	// left as shown: both are kept.
	if code, body = editor.do("GET", page, nil); code != 200 {
		t.Fatalf("editor's page: %d %s", code, mainOf(body))
	}
	masked := form.MaskChatURL(dingURL)
	code, body = editor.do("POST", page, url.Values{"op": {"save"}, "at": {"dingtalk:0"}, "kind": {"dingtalk"}, "url": {masked}, "fields": {"name", "phone"}})
	if code != 200 || !strings.Contains(body, "The robot is changed and the form published.") {
		t.Fatalf("editor's save: %d %s", code, mainOf(body))
	}
	got := h.Server.Forms.Get("fair-a").Def.Notify.DingTalk
	if len(got) != 1 || got[0].URL != dingURL || got[0].Secret != "SECabc123" || strings.Join(got[0].Fields, ",") != "name,phone" {
		t.Fatalf("after the editor's save: %+v", got)
	}
	// A viewer may not save.
	code, _ = viewer.do("POST", page, url.Values{"op": {"remove"}, "at": {"slack:0"}})
	if code != 403 {
		t.Fatalf("a viewer removed a robot: %d", code)
	}

	// The owner moves the Slack robot... removes it; the saved YAML
	// reads back as the robots the page lists.
	code, body = owner.do("POST", page, url.Values{"op": {"remove"}, "at": {"slack:0"}})
	if code != 200 || !strings.Contains(body, "The robot is removed and the form published.") || strings.Contains(body, "slacktoken") {
		t.Fatalf("remove: %d %s", code, mainOf(body))
	}
	f = h.Server.Forms.Get("fair-a")
	if len(f.Def.Notify.Slack) != 0 {
		t.Fatalf("the slack robot is still there: %+v", f.Def.Notify.Slack)
	}
	again, err := form.Parse(f.Source(), "")
	if err != nil {
		t.Fatalf("the saved YAML does not check: %v\n%s", err, f.Source())
	}
	if n := again[0].Def.Notify; len(n.DingTalk) != 1 || n.DingTalk[0].URL != dingURL || n.DingTalk[0].Secret != "SECabc123" ||
		len(n.Slack)+len(n.WeCom)+len(n.Feishu) != 0 || strings.Join(n.DingTalk[0].Fields, ",") != "name,phone" {
		t.Fatalf("read back: %+v\n%s", n, f.Source())
	}
	// While the builder holds a draft, saving here (which would throw it
	// away) is refused until it is published or discarded.
	code, body = owner.do("GET", "/admin/forms/fair-a/build", nil)
	if code != 200 {
		t.Fatalf("the builder: %d %s", code, mainOf(body))
	}
	code, body = owner.do("POST", "/admin/forms/fair-a/build", url.Values{"op": {"save"}, "langs": {"en"}, "title_en": {"Fair A, draft"}})
	if code != 200 || !strings.Contains(body, "Fair A, draft") {
		t.Fatalf("save a draft: %d %s", code, mainOf(body))
	}
	code, body = owner.do("POST", page, url.Values{"op": {"remove"}, "at": {"dingtalk:0"}})
	if code != 409 || !strings.Contains(body, "publish or discard it before changing the robots") {
		t.Fatalf("with a draft: %d %s", code, mainOf(body))
	}
	if len(h.Server.Forms.Get("fair-a").Def.Notify.DingTalk) != 1 {
		t.Fatal("a save with a draft pending was published")
	}
	// Versioned and audited: one version per save, each in the log.
	// Saves: two adds, the editor's change, the removal.
	code, body = owner.do("GET", "/admin/forms/fair-a/versions", nil)
	if code != 200 || strings.Count(body, "Form published") != 4 {
		t.Fatalf("versions: %d %s", code, mainOf(body))
	}
	code, body = owner.do("GET", "/admin/audit?form=fair-a", nil)
	if code != 200 || strings.Count(body, "Form published") != 4 || !strings.Contains(body, "editor@example.org") {
		t.Fatalf("audit log: %d %s", code, mainOf(body))
	}
}

// mainOf is a page's main part, for a failure's message.
func mainOf(page string) string {
	if i := strings.Index(page, "<main"); i >= 0 {
		page = page[i:]
	}
	if len(page) > 6000 {
		page = page[:6000]
	}
	return page
}
