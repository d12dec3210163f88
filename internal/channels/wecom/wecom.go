// Package wecom posts a form's events to a WeCom (企业微信) group robot
// (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…):
// {"msgtype":"text","text":{"content":…}}, answered HTTP 200 with
// {"errcode":0,"errmsg":"ok"}, or another errcode.
package wecom

import (
	"time"
	"unicode/utf8"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// Platform is WeCom's group robot.
var Platform = chat.Platform{Kind: form.ChatWeCom, Request: request, Answer: chat.ErrcodeAnswer(retryable)}

// New makes the WeCom channel.
func New(post chat.Poster) *chat.Channel { return chat.New(Platform, post) }

// maxContent is the robot's bound on a text message, in bytes.
const maxContent = 2048

func request(b form.ChatBot, m chat.Message, _ time.Time) (string, []byte, error) {
	out, err := chat.TextJSON(Truncate(m.Text(), maxContent))
	return b.URL, out, err
}

// Truncate cuts s to at most n bytes, never inside a character.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// retryable are the codes a later attempt may pass: -1 system busy,
// 45009 over the robot's rate (20 messages a minute), 45033 too many
// calls at once.
var retryable = map[int]bool{-1: true, 45009: true, 45033: true}
