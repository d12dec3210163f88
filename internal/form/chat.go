package form

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The chat platforms a notify block can post to, each a list of robots
// in groups: notify: {slack: [{url}], wecom: [{url}], dingtalk: [{url,
// secret}], feishu: [{url, secret}]}.
const (
	ChatSlack    = "slack"
	ChatWeCom    = "wecom"
	ChatDingTalk = "dingtalk"
	ChatFeishu   = "feishu"
)

// ChatKinds are the chat platforms, in the order of a notify block.
var ChatKinds = []string{ChatSlack, ChatWeCom, ChatDingTalk, ChatFeishu}

// ChatBot is one robot of a chat group that hears of a form's entries: a
// message in the form's language naming the form and what happened,
// with the values of Fields only (none by default: a group is not the
// place for a person's data unless the owner says so).
type ChatBot struct {
	// URL is the robot's webhook address, its token in it.
	URL string `yaml:"url" json:"url"`
	// Secret signs each message (DingTalk's SEC…, Feishu's signing
	// secret); hidden from those who may not read secrets.
	Secret string `yaml:"secret" json:"-"`
	// Events are the event types sent; by default those of a webhook.
	Events []string `yaml:"events" json:"events,omitempty"`
	// Fields are the fields whose values the message shows, in order.
	Fields []string `yaml:"fields" json:"fields,omitempty"`
	// Lang is the message's language, en or zh; by default the form's
	// e-mail language, else that of its title.
	Lang string `yaml:"lang" json:"lang,omitempty"`
}

// Bots are the robots of one chat platform in a notify block.
func (n *Notify) Bots(kind string) []ChatBot {
	if n == nil {
		return nil
	}
	switch kind {
	case ChatSlack:
		return n.Slack
	case ChatWeCom:
		return n.WeCom
	case ChatDingTalk:
		return n.DingTalk
	case ChatFeishu:
		return n.Feishu
	}
	return nil
}

// ChatEndpoint is a robot's endpoint id in the outbox: its platform and
// its URL, which stays while its secret rotates.
func ChatEndpoint(kind, rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return kind + ":" + hex.EncodeToString(sum[:8])
}

// MarshalJSON is the robot as a change summary shows it: its URL with
// the token hidden (the summary is shown to editors) and, so that a new
// token still shows as a change, a digest of the whole URL.
func (b ChatBot) MarshalJSON() ([]byte, error) {
	sum := sha256.Sum256([]byte(b.URL))
	return json.Marshal(struct {
		URL    string   `json:"url"`
		Digest string   `json:"url_sha256"`
		Events []string `json:"events,omitempty"`
		Fields []string `json:"fields,omitempty"`
		Lang   string   `json:"lang,omitempty"`
	}{MaskChatURL(b.URL), hex.EncodeToString(sum[:6]), b.Events, b.Fields, b.Lang})
}

// Wants says whether the robot gets events of this type.
func (b ChatBot) Wants(typ string) bool {
	if len(b.Events) == 0 {
		return slices.Contains(DefaultWebhookEvents, typ)
	}
	return slices.Contains(b.Events, typ)
}

// chatPlatform is where a platform's robots live, for telling a URL of
// one platform listed under another.
type chatPlatform struct {
	kind, name string
	hosts      []string
	path       string // the robot's path, or its prefix when it ends in /
	example    string
}

var chatPlatforms = []chatPlatform{
	{ChatSlack, "Slack", []string{"hooks.slack.com"}, "/services/", "https://hooks.slack.com/services/T…/B…/…"},
	{ChatWeCom, "WeCom (企业微信)", []string{"qyapi.weixin.qq.com"}, "/cgi-bin/webhook/send", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…"},
	{ChatDingTalk, "DingTalk (钉钉)", []string{"oapi.dingtalk.com"}, "/robot/send", "https://oapi.dingtalk.com/robot/send?access_token=…"},
	{ChatFeishu, "Feishu/Lark (飞书)", []string{"open.feishu.cn", "open.larksuite.com"}, "/open-apis/bot/v2/hook/", "https://open.feishu.cn/open-apis/bot/v2/hook/…"},
}

// ChatPlatformOf says which chat platform's robot a URL is, by its host,
// or "" for another host (a receiver of the owner's, a proxy, a private
// deployment).
func ChatPlatformOf(rawURL string) string {
	if p := platformOf(rawURL); p != nil {
		return p.kind
	}
	return ""
}

func platformOf(rawURL string) *chatPlatform {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	host := strings.ToLower(u.Hostname())
	for i, p := range chatPlatforms {
		if slices.Contains(p.hosts, host) {
			return &chatPlatforms[i]
		}
	}
	return nil
}

// checkChatURL says what is wrong with a URL listed under kind: another
// platform's robot, or the platform's host with a path no robot has.
func checkChatURL(kind, rawURL string) string {
	p := platformOf(rawURL)
	if p == nil {
		return ""
	}
	if p.kind != kind {
		return fmt.Sprintf("is a %s robot's URL (%s), not a %s one: list it under notify.%s", p.name, p.hosts[0], platformName(kind), p.kind)
	}
	u, _ := url.Parse(rawURL)
	if u.Scheme != "https" {
		return fmt.Sprintf("is a %s robot's URL over %s: write it with https://, so that its token is not sent in the clear", p.name, u.Scheme)
	}
	if strings.HasSuffix(p.path, "/") && (!strings.HasPrefix(u.Path, p.path) || len(u.Path) == len(p.path)) ||
		!strings.HasSuffix(p.path, "/") && u.Path != p.path {
		return fmt.Sprintf("is not a %s robot's URL: copy it from the group's robot settings, such as %s", p.name, p.example)
	}
	return ""
}

func platformName(kind string) string {
	for _, p := range chatPlatforms {
		if p.kind == kind {
			return p.name
		}
	}
	return kind
}

// MaskChatURL is a robot's URL with its token hidden: the query (WeCom's
// key, DingTalk's access_token) as MaskURL hides it, and a token in the
// path (Slack's /services/…, Feishu's /hook/…) from where it starts.
func MaskChatURL(raw string) string {
	out := MaskURL(raw)
	u, err := url.Parse(out)
	if err != nil {
		return out
	}
	for _, marker := range []string{"/services/", "/hook/"} {
		if i := strings.Index(u.Path, marker); i >= 0 && len(u.Path) > i+len(marker) {
			rest := ""
			if u.RawQuery != "" {
				rest = "?" + u.RawQuery
			}
			u.RawQuery, u.Path, u.RawPath = "", u.Path[:i+len(marker)], ""
			return u.String() + HiddenSecret + rest
		}
	}
	return out
}

// checkChat checks the robots of a notify block.
func (c *compiler) checkChat(n *Notify, f *Form, checkURL func(string) error) {
	for _, kind := range ChatKinds {
		for i, b := range n.Bots(kind) {
			at := fmt.Sprintf("notify.%s[%d]", kind, i)
			if err := checkURL(b.URL); err != nil {
				c.add("", fmt.Sprintf("%s.url: %s", at, strings.TrimPrefix(err.Error(), "check webhook url: ")))
			} else if msg := checkChatURL(kind, b.URL); msg != "" {
				c.add("", fmt.Sprintf("%s.url %s", at, msg))
			}
			switch {
			case b.Secret != "" && (kind == ChatSlack || kind == ChatWeCom):
				c.add("", fmt.Sprintf("%s.secret: a %s robot has no secret (its token is in the URL); remove it", at, platformName(kind)))
			case b.Secret != "" && kind == ChatDingTalk && !strings.HasPrefix(b.Secret, "SEC"):
				c.add("", fmt.Sprintf("%s.secret is not a DingTalk signing secret: copy the one starting SEC from the robot's 加签 setting", at))
			}
			for _, e := range b.Events {
				if !slices.Contains(webhookEvents, e) {
					c.add("", fmt.Sprintf("%s.events: %q is not an event; use any of %s", at, e, strings.Join(webhookEvents, ", ")))
				}
			}
			if f != nil {
				for _, name := range b.Fields {
					if _, ok := f.byName[name]; !ok {
						c.add("", fmt.Sprintf("%s.fields: %q is not a field of this form", at, name))
					}
				}
			}
			if b.Lang != "" && b.Lang != "en" && b.Lang != "zh" {
				c.add("", fmt.Sprintf("%s.lang %q is not known: use en or zh", at, b.Lang))
			}
		}
	}
}
