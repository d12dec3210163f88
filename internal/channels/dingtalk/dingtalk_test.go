package dingtalk

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSignedURL: the signature of DingTalk's documented rule (HMAC-SHA256
// keyed by the secret over "timestamp\nsecret", base64, URL-encoded),
// against a value computed apart (Python's hmac), with the robot's
// access_token kept.
func TestSignedURL(t *testing.T) {
	t.Parallel()
	const secret = "SEC000000000000000000000"
	now := time.UnixMilli(1700000000000)
	if got, want := Sign(secret, now.UnixMilli()), "1zJ/w34EOSVAYr7cu7Vo8LnebmK2/GrCgegtr8mQrqM="; got != want {
		t.Fatalf("sign %s, want %s", got, want)
	}
	raw, err := SignedURL("https://oapi.dingtalk.com/robot/send?access_token=abc", secret, now)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	if q := u.Query(); q.Get("access_token") != "abc" || q.Get("timestamp") != "1700000000000" || q.Get("sign") != "1zJ/w34EOSVAYr7cu7Vo8LnebmK2/GrCgegtr8mQrqM=" {
		t.Fatalf("signed url %s", raw)
	}
	if want := "sign=1zJ%2Fw34EOSVAYr7cu7Vo8LnebmK2%2FGrCgegtr8mQrqM%3D"; !strings.Contains(u.RawQuery, want) {
		t.Fatalf("the sign is not URL-encoded: %s", u.RawQuery)
	}
}

// TestAnswer: errcode 0 is taken; a rate limit is retried; a refused
// signature or token is not.
func TestAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, code string
		retry      bool
	}{
		{`{"errcode":0,"errmsg":"ok"}`, "", false},
		{`{"errcode":310000,"errmsg":"sign not match"}`, "310000", false},
		{`{"errcode":300001,"errmsg":"token is not exist"}`, "300001", false},
		{`{"errcode":130101,"errmsg":"send too fast"}`, "130101", true},
		{`not json`, "", false},
	} {
		code, _, retry := Platform.Answer(200, []byte(tc.body))
		if code != tc.code || retry != tc.retry {
			t.Errorf("%s: code %q retry %v", tc.body, code, retry)
		}
	}
}
