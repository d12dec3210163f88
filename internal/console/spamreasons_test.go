package console_test

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// An entry kept as spam for a missing proof-of-work says why on its page,
// in English and Chinese, and can be rescued from there.
func TestSpamReasonShown(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: pow
site: a
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, challenge_fallback: spam}
`, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	id := submit(t, h, "pow", `{"name":"Bot"}`)
	code, body := b.do("GET", "/admin/forms/pow/entries/"+id, nil)
	if code != 200 || !strings.Contains(body, "Why spam") || !strings.Contains(body, "No proof-of-work solution") || !strings.Contains(body, "Not spam: decide it again") {
		t.Fatalf("entry page: %d %s", code, body)
	}
	code, body = b.do("GET", "/admin/forms/pow/entries/"+id+"?lang=zh", nil)
	if code != 200 || !strings.Contains(body, "判为垃圾的原因") || !strings.Contains(body, "没有防机器人校验") {
		t.Fatalf("entry page in Chinese: %d %s", code, body)
	}
}
