package hosted

import (
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/form"
)

// allCodes is every field error code of formd (the codes a 422
// validation-failed lists, and the SDK's FieldErrorCode): the Chinese page
// must have a specific text for each.
var allCodes = []string{
	"required", "invalid-value", "invalid-email", "invalid-phone", "invalid-option", "invalid-date",
	"not-a-number", "not-an-integer", "too-small", "too-large", "too-short", "too-long",
	"too-early", "too-late", "too-few", "too-many", "pattern", "unknown-field",
	"file-rejected", "file-too-large",
}

func TestChineseErrorForEveryCode(t *testing.T) {
	t.Parallel()
	for _, code := range allCodes {
		if zhErrors[code] == "" {
			t.Errorf("no Chinese text for %s", code)
		}
	}
	if len(zhErrors) != len(allCodes) {
		t.Errorf("%d Chinese texts for %d codes", len(zhErrors), len(allCodes))
	}
}

func TestErrorTextNamesTheLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		l    lang
		e    form.FieldError
		want string
	}{
		{chinese, form.FieldError{Code: "too-long", Message: "must be at most 100 characters", Limit: "100"}, "姓名: 内容太长，最多 100 个字符。"},
		{chinese, form.FieldError{Code: "too-long", Message: "must be at most 100 characters"}, "姓名: 内容太长。"},
		{chinese, form.FieldError{Code: "too-large", Message: "must be at most 4", Limit: "4"}, "姓名: 数值太大，最大为 4。"},
		{chinese, form.FieldError{Code: "too-late", Message: "must be on or before 2027-03-10", Limit: "2027-03-10"}, "姓名: 日期太晚，不能晚于 2027-03-10。"},
		{chinese, form.FieldError{Code: "too-few", Message: "choose at least 2", Limit: "2"}, "姓名: 选择的项目太少，至少选 2 项。"},
		{chinese, form.FieldError{Code: "required", Message: "is required"}, "姓名: 此项必填。"},
		{english, form.FieldError{Code: "too-long", Message: "must be at most 100 characters", Limit: "100"}, "姓名 must be at most 100 characters."},
	}
	for _, tc := range tests {
		if got := errorText(tc.l, "姓名", tc.e); got != tc.want {
			t.Errorf("%s %s %q: got %q, want %q", tc.l.Tag, tc.e.Code, tc.e.Limit, got, tc.want)
		}
	}
}

// The SDK's state texts the hosted page passes, unsaved and unknown-field
// included (they are written by the template, not by messages()).
func TestPageGivesTheSDKEveryText(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, nil, nil)
	for _, tc := range []struct {
		lang string
		want []string
	}{
		{"en", []string{`data-msg-unsaved="Not saved on this device: keep this page open until it is sent."`}},
		{"zh-CN", []string{
			`data-msg-unsaved="未能保存在本机：请保持此页面打开，直到发送完成。"`, `data-msg-saved="已保存在本机`,
			`data-err-too-long="内容太长[，最多 {limit} 个字符]。"`, `data-err-unknown-field="此表单没有这一项。"`,
		}},
	} {
		res := get(t, mux, "/f/fair", map[string]string{"Accept-Language": tc.lang})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tc.lang, res.StatusCode)
		}
		page := body(t, res)
		for _, w := range tc.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: page lacks %s", tc.lang, w)
			}
		}
		for _, s := range []string{"sending", "saved", "unsaved", "received", "waitlisted", "duplicate", "invalid", "closed", "full", "failed"} {
			if !strings.Contains(page, "data-msg-"+s+`="`) {
				t.Errorf("%s: no data-msg-%s", tc.lang, s)
			}
		}
	}
}
