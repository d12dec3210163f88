// Package chat is what the chat platforms' robots have in common — Slack,
// WeCom (企业微信), DingTalk (钉钉), Feishu/Lark (飞书), each a package
// of its own beside this one: an outbox.Channel over a Platform that
// says only how one message is posted and how its answer reads. The
// outbox gives each robot what it gives webhooks: retries with backoff,
// a breaker, dead letters and redelivery; the posts go through the
// webhook sender, so through the same SSRF guard.
//
// A message names the form and what happened in the form's language
// (en or zh), with the entry's id and time; a person's values only for
// the fields the owner lists under fields.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/webhooks"
)

// Poster posts one JSON body (webhooks.Sender.Post).
type Poster interface {
	Post(ctx context.Context, url string, body []byte) webhooks.Result
}

// Platform is what one chat platform's robots differ in.
type Platform struct {
	// Kind is the platform's key in a notify block (form.ChatSlack…).
	Kind string
	// Request is the URL and JSON body that post one message; now is the
	// attempt's time, for a signature.
	Request func(b form.ChatBot, m Message, now time.Time) (url string, body []byte, err error)
	// Answer reads the platform's answer to a post that got an HTTP
	// status below 500 (but 410 and 429): its own error code and message,
	// code "" when it says the message was taken (or says nothing of
	// its own), and whether trying again may help (a rate limit, a busy
	// server) or not (a bad token, a signature or keyword refused: a
	// dead letter at once, redelivered once the robot is fixed).
	Answer func(status int, body []byte) (code, msg string, retry bool)
}

// Channel posts to one platform's robots.
type Channel struct {
	p    Platform
	post Poster
}

// New makes the channel of a platform.
func New(p Platform, post Poster) *Channel { return &Channel{p: p, post: post} }

// Kind is the platform's key.
func (c *Channel) Kind() string { return c.p.Kind }

// Owns says whether an endpoint id is one of this platform's robots.
func (c *Channel) Owns(endpoint string) bool { return strings.HasPrefix(endpoint, c.p.Kind+":") }

// Endpoints lists the robots of the blocks that get events of type typ.
func (c *Channel) Endpoints(blocks []*form.Notify, typ string) []string {
	var out []string
	for _, b := range c.bots(blocks) {
		if ep := form.ChatEndpoint(c.p.Kind, b.URL); b.Wants(typ) && !contains(out, ep) {
			out = append(out, ep)
		}
	}
	return out
}

func (c *Channel) bots(blocks []*form.Notify) []form.ChatBot {
	var out []form.ChatBot
	for _, n := range blocks {
		out = append(out, n.Bots(c.p.Kind)...)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Send posts one event's message to its robot.
func (c *Channel) Send(ctx context.Context, j *outbox.Job) outbox.Outcome {
	var bot *form.ChatBot
	for _, b := range c.bots(j.Blocks) {
		if form.ChatEndpoint(c.p.Kind, b.URL) == j.Endpoint {
			bot = &b
			break
		}
	}
	if bot == nil {
		return outbox.Outcome{Outcome: attempt.Refused, Err: errors.New("the form no longer names this " + c.p.Kind + " robot")}
	}
	dl := j.Group[0]
	doc, err := j.Entry(ctx, dl)
	if err != nil {
		return outbox.Outcome{Outcome: attempt.Retry, Err: err}
	}
	m := Compose(j.Form, j.Blocks, *bot, dl.Event, doc, j.Location(), j.ConsoleURL("forms", j.Form.ID(), "submissions", doc.ID))
	url, body, err := c.p.Request(*bot, m, j.Now())
	if err != nil {
		return outbox.Outcome{Outcome: attempt.Refused, Err: fmt.Errorf("%s message: %w", c.p.Kind, err)}
	}
	res := c.post.Post(ctx, url, body)
	o := outbox.FromResult(res)
	if res.Status == 0 || res.Status >= 500 || res.Status == 410 || res.Status == 429 || res.Status/100 == 3 {
		return o
	}
	code, msg, retry := c.p.Answer(res.Status, res.Answer)
	if code == "" {
		return o // a 2xx is delivered, another 4xx retried as a webhook's is
	}
	o.Code = code
	o.Err = fmt.Errorf("%s answered code %s: %s", c.p.Kind, code, msg)
	o.Excerpt = webhooks.Excerpt([]byte(c.p.Kind + " code " + code + ": " + msg))
	if retry {
		o.Outcome, o.Fault = attempt.Retry, true
	} else {
		o.Outcome, o.Fault = attempt.Refused, false
	}
	return o
}

// Message is what a robot says of one event.
type Message struct {
	Lang string
	// Title is "<form>: <what happened>".
	Title string
	// Lines follow it: the entry, its time, the listed fields, a link.
	Lines []string
	// Link is the entry in the console, "" without --public-url.
	Link string
}

// Text is the message as plain text, its title first.
func (m Message) Text() string {
	return strings.Join(append([]string{m.Title}, m.Lines...), "\n")
}

// Compose makes an event's message in the robot's language.
func Compose(f *form.Form, blocks []*form.Notify, b form.ChatBot, e store.Event, doc store.EntryDoc, loc *time.Location, link string) Message {
	lang := Lang(f, blocks, b)
	t := texts[lang]
	title := f.Def.Title.For(lang)
	if title == "" {
		title = f.ID()
	}
	what, ok := t.events[e.Type]
	if !ok {
		what = e.Type
	}
	if loc == nil {
		loc = time.UTC
	}
	m := Message{Lang: lang, Title: title + t.colon + what, Link: link}
	m.Lines = append(m.Lines, t.entry+doc.ID, t.received+doc.ReceivedAt.In(loc).Format("2006-01-02 15:04 MST"))
	for _, fv := range outbox.Fields(f, doc, b.Fields, lang) {
		m.Lines = append(m.Lines, fv.Label+t.colon+fv.Value)
	}
	if link != "" {
		m.Lines = append(m.Lines, t.open+link)
	}
	return m
}

// Lang is a robot's language: its own, else the form's e-mail language,
// else zh for a form titled in Chinese only, else en.
func Lang(f *form.Form, blocks []*form.Notify, b form.ChatBot) string {
	if b.Lang != "" {
		return b.Lang
	}
	for _, n := range blocks {
		if n != nil && n.Email != nil && n.Email.Lang != "" {
			return n.Email.Lang
		}
	}
	t := f.Def.Title
	if _, zh := t["zh"]; zh {
		if _, en := t["en"]; !en {
			return "zh"
		}
	}
	return "en"
}

type text struct {
	colon, entry, received, open string
	events                       map[string]string
}

var texts = map[string]text{
	"en": {colon: ": ", entry: "Entry: ", received: "Received: ", open: "Open: ", events: map[string]string{
		store.EventStored:     "new entry",
		store.EventWaitlisted: "new entry, on the waitlist",
		store.EventPending:    "new entry, awaiting review",
		store.EventPromoted:   "moved from the waitlist to a place",
		store.EventCancelled:  "entry cancelled",
		store.EventApproved:   "entry approved",
		store.EventDeclined:   "entry declined",
		store.EventSpam:       "entry held as spam",
		store.EventUpdated:    "answers changed by the participant",
		store.EventCheckedIn:  "checked in at the door",
	}},
	"zh": {colon: "：", entry: "编号：", received: "提交时间：", open: "查看：", events: map[string]string{
		store.EventStored:     "新提交",
		store.EventWaitlisted: "新提交（候补）",
		store.EventPending:    "新提交，待审核",
		store.EventPromoted:   "候补转为正式名额",
		store.EventCancelled:  "提交已取消",
		store.EventApproved:   "提交已通过审核",
		store.EventDeclined:   "提交未通过审核",
		store.EventSpam:       "提交被判为垃圾信息",
		store.EventUpdated:    "参与者修改了答案",
		store.EventCheckedIn:  "已签到入场",
	}},
}

// TextBody is the text message of the robots that take
// {"msgtype":"text","text":{"content":…}} (DingTalk's and WeCom's).
type TextBody struct {
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
}

// TextJSON is the body of a text message of content, as TextBody.
func TextJSON(content string) ([]byte, error) {
	var b TextBody
	b.MsgType, b.Text.Content = "text", content
	return json.Marshal(b)
}

// ErrcodeAnswer reads the answers of the robots that say how a post went
// in {"errcode":0,"errmsg":"ok"} (DingTalk's and WeCom's): a code other
// than 0 is a refusal, which a later attempt may pass if retryable has it.
func ErrcodeAnswer(retryable map[int]bool) func(status int, body []byte) (string, string, bool) {
	return func(_ int, body []byte) (string, string, bool) {
		var a struct {
			ErrCode *int   `json:"errcode"`
			ErrMsg  string `json:"errmsg"`
		}
		if json.Unmarshal(body, &a) != nil || a.ErrCode == nil || *a.ErrCode == 0 {
			return "", "", false
		}
		return fmt.Sprint(*a.ErrCode), a.ErrMsg, retryable[*a.ErrCode]
	}
}
