// Package wecom posts a form's events to a WeCom (企业微信) group robot
// (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=…):
// {"msgtype":"text","text":{"content":…}}, answered HTTP 200 with
// {"errcode":0,"errmsg":"ok"}, or another errcode.
package wecom

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// Platform is WeCom's group robot.
var Platform = chat.Platform{Kind: form.ChatWeCom, Request: request, Answer: answer}

// New makes the WeCom channel.
func New(post chat.Poster) *chat.Channel { return chat.New(Platform, post) }

// Body is a text message to a group robot.
type Body struct {
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
}

// maxContent is the robot's bound on a text message, in bytes.
const maxContent = 2048

func request(b form.ChatBot, m chat.Message, _ time.Time) (string, []byte, error) {
	var body Body
	body.MsgType, body.Text.Content = "text", Truncate(m.Text(), maxContent)
	out, err := json.Marshal(body)
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

// Answer is a robot's answer.
type Answer struct {
	ErrCode *int   `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// retryable are the codes a later attempt may pass: -1 system busy,
// 45009 over the robot's rate (20 messages a minute), 45033 too many
// calls at once.
var retryable = map[int]bool{-1: true, 45009: true, 45033: true}

func answer(status int, body []byte) (string, string, bool) {
	var a Answer
	if json.Unmarshal(body, &a) != nil || a.ErrCode == nil || *a.ErrCode == 0 {
		return "", "", false
	}
	return fmt.Sprint(*a.ErrCode), a.ErrMsg, retryable[*a.ErrCode]
}
