// Package slack posts a form's events to a Slack channel through an
// incoming webhook (https://hooks.slack.com/services/…): {"text": …},
// answered 200 "ok", or a 4xx whose body names the error
// (invalid_payload, no_service, channel_not_found, …).
package slack

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// Platform is Slack's incoming webhook.
var Platform = chat.Platform{Kind: form.ChatSlack, Request: request, Answer: answer}

// New makes the Slack channel.
func New(post chat.Poster) *chat.Channel { return chat.New(Platform, post) }

// Body is what an incoming webhook is posted.
type Body struct {
	Text string `json:"text"`
}

func request(b form.ChatBot, m chat.Message, _ time.Time) (string, []byte, error) {
	body, err := json.Marshal(Body{Text: "*" + escape(m.Title) + "*\n" + escape(strings.Join(m.Lines, "\n"))})
	return b.URL, body, err
}

// escape makes text safe in Slack's mrkdwn: &, < and > as entities, so
// that a form's title or a value cannot mention @channel or make links.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// answer reads Slack's answer: 2xx is taken; a 400, 403 or 404 names a
// payload, a channel or a webhook that no retry fixes.
func answer(status int, body []byte) (string, string, bool) {
	if status/100 == 2 {
		return "", "", false
	}
	code := strings.TrimSpace(string(body))
	if code == "" || len(code) > 64 || strings.ContainsAny(code, " <{") {
		return "", "", false
	}
	switch status {
	case 400, 403, 404:
		return code, "refused by Slack (HTTP " + strconv.Itoa(status) + ")", false
	}
	return "", "", false
}
