package outbox_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/channels/dingtalk"
	"github.com/formd/formd/internal/channels/feishu"
	"github.com/formd/formd/internal/channels/slack"
	"github.com/formd/formd/internal/channels/wecom"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/webhooks"
)

const (
	dingSecret   = "SECb2f1c2a9d0e44e7f8a1b3c5d7e9f0a1b"
	feishuSecret = "nIMtb7r3N9pkXyXdtAbx6e"
)

// robot is a test receiver that checks each message against its
// platform's published request format and signature rules (written here
// from the platforms' documentation, not from formd's code) and answers
// as its platform does.
type robot struct {
	t      *testing.T
	srv    *httptest.Server
	kind   string
	answer func(n int) (status int, body string)
	mu     sync.Mutex
	texts  []string
}

func newRobot(t *testing.T, kind string, answer func(n int) (int, string)) *robot {
	r := &robot{t: t, kind: kind, answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		text, problem := r.check(req, body)
		if problem != "" {
			t.Errorf("%s robot: %s (%s %s)", kind, problem, req.URL, body)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.texts = append(r.texts, text)
		n := len(r.texts)
		r.mu.Unlock()
		status, answer := http.StatusOK, r.ok()
		if r.answer != nil {
			status, answer = r.answer(n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *robot) ok() string {
	switch r.kind {
	case "slack":
		return "ok"
	case "feishu":
		return `{"code":0,"data":{},"msg":"success"}`
	}
	return `{"errcode":0,"errmsg":"ok"}`
}

// url is the robot's address as its platform issues it, on this server.
func (r *robot) url() string {
	switch r.kind {
	case "slack":
		return r.srv.URL + "/services/T000/B000/XXXXXXXX"
	case "wecom":
		return r.srv.URL + "/cgi-bin/webhook/send?key=693a91f6-7xxx"
	case "dingtalk":
		return r.srv.URL + "/robot/send?access_token=abc123"
	}
	return r.srv.URL + "/open-apis/bot/v2/hook/5e3d587e-d78e"
}

func (r *robot) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.texts...)
}

// check verifies one request and says its text, or what is wrong.
func (r *robot) check(req *http.Request, body []byte) (string, string) {
	if req.Method != http.MethodPost || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
		return "", "want a JSON POST"
	}
	if req.Header.Get("webhook-signature") != "" {
		return "", "a robot gets no Standard Webhooks headers"
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return "", "body is not JSON"
	}
	str := func(v any) string { s, _ := v.(string); return s }
	obj := func(v any) map[string]any { o, _ := v.(map[string]any); return o }
	switch r.kind {
	case "slack":
		if req.URL.Path != "/services/T000/B000/XXXXXXXX" || str(m["text"]) == "" {
			return "", "want {\"text\": …} at the webhook's path"
		}
		return str(m["text"]), ""
	case "wecom":
		if req.URL.Query().Get("key") == "" || m["msgtype"] != "text" || str(obj(m["text"])["content"]) == "" {
			return "", `want ?key= and {"msgtype":"text","text":{"content":…}}`
		}
		return str(obj(m["text"])["content"]), ""
	case "dingtalk":
		q := req.URL.Query()
		if q.Get("access_token") != "abc123" || m["msgtype"] != "text" || str(obj(m["text"])["content"]) == "" {
			return "", `want ?access_token= and {"msgtype":"text","text":{"content":…}}`
		}
		// 钉钉: sign = urlEncode(base64(HmacSHA256(key=secret, timestamp+"\n"+secret))),
		// timestamp in milliseconds, within an hour of the server's time.
		ts, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err != nil || time.Since(time.UnixMilli(ts)).Abs() > time.Hour {
			return "", "want a timestamp in milliseconds, within the hour"
		}
		mac := hmac.New(sha256.New, []byte(dingSecret))
		mac.Write([]byte(q.Get("timestamp") + "\n" + dingSecret))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); q.Get("sign") != want {
			return "", "sign does not verify"
		}
		if !strings.Contains(req.URL.RawQuery, "sign="+strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(q.Get("sign"), "+", "%2B"), "/", "%2F"), "=", "%3D")) {
			return "", "sign is not URL-encoded"
		}
		return str(obj(m["text"])["content"]), ""
	}
	// 飞书: sign = base64(HmacSHA256(key=timestamp+"\n"+secret, "")),
	// timestamp in seconds as a string, both in the body.
	ts, err := strconv.ParseInt(str(m["timestamp"]), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Hour {
		return "", "want a timestamp string in seconds, within the hour"
	}
	mac := hmac.New(sha256.New, []byte(str(m["timestamp"])+"\n"+feishuSecret))
	if str(m["sign"]) != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		return "", "sign does not verify"
	}
	if m["msg_type"] != "text" || str(obj(m["content"])["text"]) == "" {
		return "", `want {"msg_type":"text","content":{"text":…}}`
	}
	return str(obj(m["content"])["text"]), ""
}

// chatForm is a form whose notify block lists robots; bots are YAML
// lines under notify.
func chatForm(title, bots string) string {
	return fmt.Sprintf(`
id: fair
title: %s
fields:
  - {name: name, type: text, label: {en: Name, zh: 姓名}}
  - {name: email, type: email}
notify:
%s`, title, bots)
}

func chatChannels() []outbox.Channel {
	sender := webhooks.NewSender(webhooks.Options{Guard: webhooks.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), Timeout: 2 * time.Second})
	return []outbox.Channel{slack.New(sender), wecom.New(sender), dingtalk.New(sender), feishu.New(sender)}
}

// TestChatRobotsDelivered: each platform's robot gets the event in its
// own format, signed as its platform says, naming the form and what
// happened in the form's language; a person's values only for the
// fields the owner listed.
func TestChatRobotsDelivered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, title, extra string
		want, never        []string
	}{
		{"slack", "Spring fair", "", []string{"*Spring fair: new entry*", "Entry: "}, []string{"Ann", "ann@example.org"}},
		{"wecom", "{zh: 春季市集}", "", []string{"春季市集：新提交", "编号："}, []string{"Ann", "ann@example.org"}},
		{"dingtalk", "{zh: 春季市集, en: Spring fair}", ", secret: " + dingSecret + ", lang: zh, fields: [name]", []string{"春季市集：新提交", "姓名：Ann"}, []string{"ann@example.org"}},
		{"feishu", "Spring fair", ", secret: " + feishuSecret + ", fields: [name]", []string{"Spring fair: new entry", "Name: Ann"}, []string{"ann@example.org"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			r := newRobot(t, tc.kind, nil)
			f := newFixture(t, chatForm(tc.title, fmt.Sprintf("  %s:\n    - {url: %q%s}\n", tc.kind, r.url(), tc.extra)), nil,
				outbox.Options{Channels: chatChannels()})
			f.run()
			outs := f.submit("fair", `{"name":"Ann","email":"ann@example.org"}`)
			f.waitState(outs[0].ID, store.DeliveryDelivered)
			got := r.got()
			if len(got) != 1 {
				t.Fatalf("messages: %q", got)
			}
			for _, w := range append(tc.want, outs[0].ID) {
				if !strings.Contains(got[0], w) {
					t.Errorf("the message %q does not say %q", got[0], w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(got[0], n) {
					t.Errorf("the message %q shows %q, which the owner did not list", got[0], n)
				}
			}
			ds, as := f.deliveriesOf(outs[0].ID)
			if len(ds) != 1 || !strings.HasPrefix(ds[0].Endpoint, tc.kind+":") || len(as) != 1 || as[0].Outcome != attempt.Delivered || as[0].Status != 200 {
				t.Fatalf("delivery log: %+v %+v", ds, as)
			}
		})
	}
}

// TestChatRobotErrorCodes: a robot answering its platform's error code
// with HTTP 200 is a failed attempt with that code in the delivery log:
// retried for a rate limit, a dead letter at once for a refused
// signature or token, and redelivered once fixed.
func TestChatRobotErrorCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, extra, answer string
		status              int
		code                string
		retried             bool
	}{
		{"dingtalk", ", secret: " + dingSecret, `{"errcode":310000,"errmsg":"sign not match"}`, 200, "310000", false},
		{"dingtalk", ", secret: " + dingSecret, `{"errcode":130101,"errmsg":"send too fast"}`, 200, "130101", true},
		{"wecom", "", `{"errcode":93000,"errmsg":"invalid webhook url"}`, 200, "93000", false},
		{"wecom", "", `{"errcode":45009,"errmsg":"api freq out of limit"}`, 200, "45009", true},
		{"feishu", ", secret: " + feishuSecret, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`, 200, "19021", false},
		{"feishu", ", secret: " + feishuSecret, `{"code":9499,"msg":"too many request"}`, 200, "9499", true},
		{"slack", "", "no_service", 404, "no_service", false},
	} {
		t.Run(tc.kind+"/"+tc.code, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			fixed := false
			r := newRobot(t, tc.kind, nil)
			r.answer = func(int) (int, string) {
				mu.Lock()
				defer mu.Unlock()
				if fixed {
					return 200, r.ok()
				}
				return tc.status, tc.answer
			}
			f := newFixture(t, chatForm("Fair", fmt.Sprintf("  %s:\n    - {url: %q%s}\n", tc.kind, r.url(), tc.extra)), nil,
				outbox.Options{Channels: chatChannels(), Schedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}})
			f.run()
			outs := f.submit("fair", `{"name":"Ann"}`)
			f.waitState(outs[0].ID, store.DeliveryFailed)
			ds, as := f.deliveriesOf(outs[0].ID)
			wantAttempts := 1
			if tc.retried {
				wantAttempts = 3 // the schedule's two retries, then a dead letter
			}
			if ds[0].Attempts != wantAttempts || len(as) != wantAttempts {
				t.Fatalf("attempts: %+v %+v", ds, as)
			}
			for _, a := range as {
				if a.Status != tc.status || !strings.Contains(a.Excerpt, tc.code) || a.Outcome == attempt.Delivered {
					t.Fatalf("the attempt does not carry the platform's code %s: %+v", tc.code, a)
				}
			}
			mu.Lock()
			fixed = true
			mu.Unlock()
			if n, err := f.st.Redeliver(t.Context(), store.DeliverySelection{Form: "fair", FailedOnly: true}, time.Now()); err != nil || n != 1 {
				t.Fatalf("redeliver: %d %v", n, err)
			}
			f.d.Wake()
			f.waitState(outs[0].ID, store.DeliveryDelivered)
		})
	}
}

// TestChatRobotRefusedByTheGuard: a robot's URL that resolves to an
// address the guard refuses is never dialled.
func TestChatRobotRefusedByTheGuard(t *testing.T) {
	t.Parallel()
	r := newRobot(t, "wecom", nil)
	sender := webhooks.NewSender(webhooks.Options{Timeout: 2 * time.Second}) // the default guard: public internet only
	f := newFixture(t, chatForm("Fair", fmt.Sprintf("  wecom:\n    - {url: %q}\n", r.url())), nil,
		outbox.Options{Channels: []outbox.Channel{wecom.New(sender)}})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	f.waitState(outs[0].ID, store.DeliveryFailed)
	if got := r.got(); len(got) != 0 {
		t.Fatalf("the guard let a message through to 127.0.0.1: %q", got)
	}
	poll.Until(t, "the refusal logged", 5*time.Second, func() bool {
		_, as := f.deliveriesOf(outs[0].ID)
		return len(as) == 1 && as[0].Outcome == attempt.Refused
	})
}
