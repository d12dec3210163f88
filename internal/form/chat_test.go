package form

import (
	"strings"
	"testing"
)

// TestCheckChatRobots: forms check names a robot URL of another platform
// (a DingTalk URL under wecom, a chat URL under webhooks), a platform's
// host with no robot's path, a secret a platform has none of, and fields
// the form does not have; a robot on another host (a proxy, a private
// deployment, a test receiver) passes.
func TestCheckChatRobots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, notify, want string
	}{
		{"dingtalk under wecom", "wecom: [{url: 'https://oapi.dingtalk.com/robot/send?access_token=x'}]",
			"notify.wecom[0].url is a DingTalk (钉钉) robot's URL (oapi.dingtalk.com), not a WeCom (企业微信) one: list it under notify.dingtalk"},
		{"wecom under dingtalk", "dingtalk: [{url: 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=x'}]", "list it under notify.wecom"},
		{"feishu under slack", "slack: [{url: 'https://open.feishu.cn/open-apis/bot/v2/hook/x'}]", "list it under notify.feishu"},
		{"lark under dingtalk", "dingtalk: [{url: 'https://open.larksuite.com/open-apis/bot/v2/hook/x'}]", "list it under notify.feishu"},
		{"slack under webhooks", "webhooks: [{url: 'https://hooks.slack.com/services/T/B/X', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]",
			"notify.webhooks[0].url is a Slack robot's URL, which does not take formd's webhook events: list it under notify.slack"},
		{"wrong path", "wecom: [{url: 'https://qyapi.weixin.qq.com/cgi-bin/message/send?key=x'}]", "notify.wecom[0].url is not a WeCom (企业微信) robot's URL"},
		{"feishu without token", "feishu: [{url: 'https://open.feishu.cn/open-apis/bot/v2/hook/'}]", "is not a Feishu/Lark (飞书) robot's URL"},
		{"secret on slack", "slack: [{url: 'https://hooks.slack.com/services/T/B/X', secret: s}]", "notify.slack[0].secret: a Slack robot has no secret"},
		{"dingtalk secret", "dingtalk: [{url: 'https://oapi.dingtalk.com/robot/send?access_token=x', secret: abc}]", "starting SEC"},
		{"unknown field", "feishu: [{url: 'https://open.feishu.cn/open-apis/bot/v2/hook/x', fields: [phone]}]", `notify.feishu[0].fields: "phone" is not a field`},
		{"unknown event", "slack: [{url: 'https://hooks.slack.com/services/T/B/X', events: [stored]}]", `notify.slack[0].events: "stored" is not an event`},
		// The erasure's notice is the person's mail alone.
		{"the erasure's notice", "slack: [{url: 'https://hooks.slack.com/services/T/B/X', events: [submission.erased]}]", `notify.slack[0].events: "submission.erased" is not an event`},
		{"the erasure's notice to a webhook", "webhooks: [{url: 'https://hooks.example.org/x', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, events: [submission.erased]}]",
			`notify.webhooks[0].events: "submission.erased" is not an event`},
		{"unknown lang", "slack: [{url: 'https://hooks.slack.com/services/T/B/X', lang: fr}]", `notify.slack[0].lang "fr" is not known`},
		{"http url", "slack: [{url: 'http://hooks.slack.com/services/T/B/X'}]", "notify.slack[0].url is a Slack robot's URL over http: write it with https://"},
		{"all fine", `slack: [{url: 'https://hooks.slack.com/services/T/B/X'}]
  wecom: [{url: 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=x'}]
  dingtalk: [{url: 'https://oapi.dingtalk.com/robot/send?access_token=x', secret: SECabc, fields: [name]}]
  feishu: [{url: 'https://open.feishu.cn/open-apis/bot/v2/hook/x', secret: s, lang: zh}]`, ""},
		{"another host", "wecom: [{url: 'https://robots.example.org/cgi-bin/webhook/send?key=x'}]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "id: f\nfields: [{name: name, type: text}]\nnotify:\n  " + tc.notify + "\n"
			_, err := ParseSet([]byte(src), "f.yaml", nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestErasureNoticeIsNoRobotsEvent: a webhook or robot that names no
// events never gets the erasure's notice, whose only reader is the mail
// to the person; and the form's confirmation field says who that is.
func TestErasureNoticeIsNoRobotsEvent(t *testing.T) {
	t.Parallel()
	if (Webhook{}).Wants("submission.erased") || (ChatBot{}).Wants("submission.erased") {
		t.Fatal("the default events include the erasure's notice")
	}
	set, err := ParseSet([]byte("id: f\nfields: [{name: email, type: email}]\nnotify:\n  email: {confirm: email}\n---\nid: g\nfields: [{name: name, type: text}]\n"), "f.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Forms[0].ConfirmField(); got != "email" {
		t.Fatalf("confirm field %q", got)
	}
	var none *Form
	if set.Forms[1].ConfirmField() != "" || none.ConfirmField() != "" {
		t.Fatal("a form without confirmations names a field")
	}
}

// TestMaskChatRobots: those who may not read secrets see no robot's
// token (Slack's and Feishu's are in the path, WeCom's and DingTalk's in
// the query) nor its signing secret; sent back unchanged, both are kept.
func TestMaskChatRobots(t *testing.T) {
	t.Parallel()
	stored := map[string]ChatBot{
		"slack":    {URL: "https://hooks.slack.com/services/T0/B0/slackTOKEN"},
		"wecom":    {URL: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wecomTOKEN"},
		"dingtalk": {URL: "https://oapi.dingtalk.com/robot/send?access_token=dingTOKEN", Secret: "SECdingSECRET"},
		"feishu":   {URL: "https://open.feishu.cn/open-apis/bot/v2/hook/feishuTOKEN", Secret: "feishuSECRET"},
	}
	src := "id: f\nfields: [{name: name, type: text}]\nnotify:\n"
	for _, kind := range ChatKinds {
		b := stored[kind]
		src += "  " + kind + ":\n    - url: " + b.URL + "\n"
		if b.Secret != "" {
			src += "      secret: " + b.Secret + "\n"
		}
	}
	masked := string(MaskSecrets([]byte(src)))
	for _, s := range []string{"TOKEN", "SECRET"} {
		if strings.Contains(masked, s) {
			t.Fatalf("masked still holds a %s:\n%s", s, masked)
		}
	}
	for _, s := range []string{"https://hooks.slack.com/services/" + HiddenSecret, "https://open.feishu.cn/open-apis/bot/v2/hook/" + HiddenSecret,
		"https://oapi.dingtalk.com/robot/send?" + HiddenSecret} {
		if !strings.Contains(masked, s) {
			t.Fatalf("masked does not show %s:\n%s", s, masked)
		}
	}
	known := func(u string) (Webhook, bool) {
		for _, b := range stored {
			if b.URL == u || MaskChatURL(b.URL) == u {
				return Webhook{URL: b.URL, Secret: b.Secret}, true
			}
		}
		return Webhook{}, false
	}
	back, err := RestoreSecrets([]byte(masked), known)
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseSet(back, "f.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := set.Forms[0].Def.Notify
	for _, kind := range ChatKinds {
		if got := n.Bots(kind); len(got) != 1 || got[0].URL != stored[kind].URL || got[0].Secret != stored[kind].Secret {
			t.Errorf("%s restored as %+v", kind, got)
		}
	}
}

// TestChangeSummaryHidesRobotTokens: the change summary an editor sees
// names a robot's changed URL without its token.
func TestChangeSummaryHidesRobotTokens(t *testing.T) {
	t.Parallel()
	old := mustForm(t, "id: f\nfields: [{name: n, type: text}]\nnotify:\n  slack: [{url: 'https://hooks.slack.com/services/T/B/oldTOKEN'}]\n")
	next := mustForm(t, "id: f\nfields: [{name: n, type: text}]\nnotify:\n  slack: [{url: 'https://hooks.slack.com/services/T/B/newTOKEN'}]\n")
	c := Compare(old, next)
	var notify *SettingChange
	for i, s := range c.Settings {
		if s.Setting == "notify" {
			notify = &c.Settings[i]
		}
	}
	if notify == nil {
		t.Fatalf("a new robot token is not a change: %+v", c)
	}
	if strings.Contains(notify.Old+notify.New, "TOKEN") || !strings.Contains(notify.New, "services/(hidden)") {
		t.Fatalf("the summary shows %q → %q", notify.Old, notify.New)
	}
}
