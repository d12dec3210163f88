// Package feishu posts a form's events to a Feishu/Lark (飞书) custom
// bot (https://open.feishu.cn/open-apis/bot/v2/hook/…):
// {"msg_type":"text","content":{"text":…}}, signed when the bot has a
// signing secret with "timestamp" (seconds, a string) and "sign" in the
// body: HMAC-SHA256 keyed by "timestamp\nsecret" over an empty message,
// base64. It answers {"code":0,"msg":"success"} (older bots
// {"StatusCode":0}), or another code, mostly with HTTP 200.
package feishu

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// Platform is Feishu's custom bot.
var Platform = chat.Platform{Kind: form.ChatFeishu, Request: request, Answer: answer}

// New makes the Feishu channel.
func New(post chat.Poster) *chat.Channel { return chat.New(Platform, post) }

// Body is a text message to a custom bot.
type Body struct {
	Timestamp string `json:"timestamp,omitempty"`
	Sign      string `json:"sign,omitempty"`
	MsgType   string `json:"msg_type"`
	Content   struct {
		Text string `json:"text"`
	} `json:"content"`
}

// Sign is the signature of a timestamp in seconds.
func Sign(secret string, secs int64) string {
	mac := hmac.New(sha256.New, []byte(strconv.FormatInt(secs, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func request(b form.ChatBot, m chat.Message, now time.Time) (string, []byte, error) {
	var body Body
	body.MsgType, body.Content.Text = "text", m.Text()
	if b.Secret != "" {
		body.Timestamp, body.Sign = strconv.FormatInt(now.Unix(), 10), Sign(b.Secret, now.Unix())
	}
	out, err := json.Marshal(body)
	return b.URL, out, err
}

// Answer is a bot's answer, either form.
type Answer struct {
	Code       *int   `json:"code"`
	Msg        string `json:"msg"`
	StatusCode *int   `json:"StatusCode"`
	StatusMsg  string `json:"StatusMessage"`
}

// retryable are the codes a later attempt may pass: 9499 and 11232 are
// rate limits (100 a minute, 5 a second). A signature refused or
// expired (19021), an address not allowed (19022), a keyword missing
// (19024) or a bad request (19001, 19002) wait for the owner.
var retryable = map[int]bool{9499: true, 11232: true, 11233: true}

func answer(status int, body []byte) (string, string, bool) {
	var a Answer
	if json.Unmarshal(body, &a) != nil {
		return "", "", false
	}
	code, msg := a.Code, a.Msg
	if code == nil {
		code, msg = a.StatusCode, a.StatusMsg
	}
	if code == nil || *code == 0 {
		return "", "", false
	}
	return fmt.Sprint(*code), msg, retryable[*code]
}
