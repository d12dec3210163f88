package hosted

// The hosted page's texts for the proof-of-work challenge (the altcha
// widget's strings and the page's own), kept apart from lang.go's tables
// so their edits do not meet; init adds them to both languages.
var powStrings = map[string][2]string{
	"pow.label":                {"Checking this browser in the background (nothing to do)", "正在后台确认浏览器（无需任何操作）"},
	"pow.verifying":            {"Checking this browser…", "正在确认浏览器…"},
	"pow.verified":             {"Browser checked: ready to send", "浏览器已确认，可以提交"},
	"pow.error":                {"The browser check failed; it is tried again when you send.", "浏览器确认失败；提交时会再试一次。"},
	"pow.expired":              {"The browser check expired; it is done again when you send.", "浏览器确认已过期；提交时会重新确认。"},
	"pow.verificationRequired": {"Please wait a moment: the browser check is finishing.", "请稍候：浏览器确认即将完成。"},
	"pow.waitAlert":            {"Checking this browser… please wait.", "正在确认浏览器…请稍候。"},
	"pow.ariaLinkLabel":        {"About ALTCHA", "关于 ALTCHA"},
	"pow.noscript":             {"This form needs JavaScript to send: it checks in the background that a browser, not a script, is sending it. Please turn JavaScript on, or use another browser.", "此表单需要启用 JavaScript 才能提交：它会在后台确认是浏览器而不是脚本在提交。请启用 JavaScript，或换一个浏览器。"},
}

func init() {
	for k, v := range powStrings {
		enStrings[k], zhStrings[k] = v[0], v[1]
	}
}
