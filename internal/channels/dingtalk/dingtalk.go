// Package dingtalk posts a form's events to a DingTalk (钉钉) custom
// robot (https://oapi.dingtalk.com/robot/send?access_token=…):
// {"msgtype":"text","text":{"content":…}}, signed when the robot has a
// signing secret (加签, SEC…) with the query parameters timestamp (in
// milliseconds) and sign: HMAC-SHA256 keyed by the secret over
// "timestamp\nsecret", base64, URL-encoded. It answers HTTP 200 with
// {"errcode":0,"errmsg":"ok"}, or another errcode.
package dingtalk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// Platform is DingTalk's custom robot.
var Platform = chat.Platform{Kind: form.ChatDingTalk, Request: request, Answer: chat.ErrcodeAnswer(retryable)}

// New makes the DingTalk channel.
func New(post chat.Poster) *chat.Channel { return chat.New(Platform, post) }

// Sign is the signature of a timestamp in milliseconds, base64 (not yet
// URL-encoded).
func Sign(secret string, ms int64) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ms, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignedURL is the robot's URL with timestamp and sign added.
func SignedURL(raw, secret string, now time.Time) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parse the robot's URL: %w", err)
	}
	ms := now.UnixMilli()
	q := u.Query()
	q.Set("timestamp", strconv.FormatInt(ms, 10))
	q.Set("sign", Sign(secret, ms))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func request(b form.ChatBot, m chat.Message, now time.Time) (string, []byte, error) {
	out, err := chat.TextJSON(m.Text())
	if err != nil || b.Secret == "" {
		return b.URL, out, err
	}
	u, err := SignedURL(b.URL, b.Secret, now)
	return u, out, err
}

// retryable are the codes a later attempt may pass: -1 system busy,
// 130101 sent too fast (20 messages a minute). A signature, keyword or
// IP refused (310000), a bad token (300001) or a robot switched off
// (400102) wait for the owner: a dead letter, redelivered once fixed.
var retryable = map[int]bool{-1: true, 130101: true}
