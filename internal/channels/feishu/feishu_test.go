package feishu

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/formd/formd/internal/channels/chat"
	"github.com/formd/formd/internal/form"
)

// TestSignedBody: Feishu's documented rule (HMAC-SHA256 keyed by
// "timestamp\nsecret" over an empty message, base64), against a value
// computed apart (Python's hmac), in the body with the timestamp as a
// string of seconds; no secret, no signature.
func TestSignedBody(t *testing.T) {
	t.Parallel()
	const want = "FqUQTprkgbuS88NMtixNVpPfOK0JXs6cAMJIfEuF5sk="
	now := time.Unix(1700000000, 0)
	_, body, err := request(form.ChatBot{URL: "https://open.feishu.cn/open-apis/bot/v2/hook/x", Secret: "nIMtb7r3N9pkXyXdtAbx6e"}, chat.Message{Title: "Fair: new entry"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	if b["timestamp"] != "1700000000" || b["sign"] != want || b["msg_type"] != "text" || b["content"].(map[string]any)["text"] != "Fair: new entry" {
		t.Fatalf("body %s", body)
	}
	_, body, _ = request(form.ChatBot{URL: "https://open.feishu.cn/open-apis/bot/v2/hook/x"}, chat.Message{Title: "t"}, now)
	var unsigned map[string]any
	if err := json.Unmarshal(body, &unsigned); err != nil || len(unsigned) != 2 {
		t.Fatalf("unsigned body %s", body)
	}
}

// TestAnswer: code 0 (or the older StatusCode 0) is taken; a rate limit
// is retried; a refused signature is not.
func TestAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, code string
		retry      bool
	}{
		{`{"code":0,"data":{},"msg":"success"}`, "", false},
		{`{"StatusCode":0,"StatusMessage":"success"}`, "", false},
		{`{"code":19021,"msg":"sign match fail"}`, "19021", false},
		{`{"code":9499,"msg":"too many request"}`, "9499", true},
	} {
		code, _, retry := answer(200, []byte(tc.body))
		if code != tc.code || retry != tc.retry {
			t.Errorf("%s: code %q retry %v", tc.body, code, retry)
		}
	}
}
