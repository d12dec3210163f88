package admin

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/form"
)

type oneForm struct{ f *form.Form }

func (o oneForm) Get(id string) *form.Form {
	if o.f.ID() == id {
		return o.f
	}
	return nil
}
func (oneForm) Site(string) *form.Site { return nil }

// TestDeliveryTargetOfChatRobots: the delivery log names a robot by its
// platform and URL with its token hidden, in the path (Slack, Feishu) as
// in the query (WeCom, DingTalk).
func TestDeliveryTargetOfChatRobots(t *testing.T) {
	t.Parallel()
	forms, err := form.Parse([]byte(`
id: fair
fields: [{name: name, type: text}]
notify:
  slack: [{url: "https://hooks.slack.com/services/T0/B0/slackTOKEN"}]
  wecom: [{url: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wecomTOKEN"}]
  dingtalk: [{url: "https://oapi.dingtalk.com/robot/send?access_token=dingTOKEN", secret: SECx}]
  feishu: [{url: "https://open.feishu.cn/open-apis/bot/v2/hook/feishuTOKEN"}]
`), "fair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := &StoreDeliveries{Forms: oneForm{forms[0]}}
	n := forms[0].Def.Notify
	for _, tc := range []struct{ kind, want string }{
		{form.ChatSlack, "slack https://hooks.slack.com/services/(hidden)"},
		{form.ChatWeCom, "wecom https://qyapi.weixin.qq.com/cgi-bin/webhook/send?(hidden)"},
		{form.ChatDingTalk, "dingtalk https://oapi.dingtalk.com/robot/send?(hidden)"},
		{form.ChatFeishu, "feishu https://open.feishu.cn/open-apis/bot/v2/hook/(hidden)"},
	} {
		got := s.target("fair", form.ChatEndpoint(tc.kind, n.Bots(tc.kind)[0].URL))
		if got != tc.want || strings.Contains(got, "TOKEN") {
			t.Errorf("%s: %q, want %q", tc.kind, got, tc.want)
		}
	}
}
