package console

// The entry page's texts for why intake classed an entry as spam (the
// reasons of package challenge, and the honeypot's and minimum time's),
// kept beside the tables they join so their edits do not meet others'.
var spamReasonStrings = map[string][2]string{
	"entry.spam-reason":                    {"Why spam", "判为垃圾的原因"},
	"spam-reason.honeypot":                 {"The hidden honeypot field was filled (people never see it).", "隐藏的诱饵字段被填写了（真人看不到它）。"},
	"spam-reason.min-seconds":              {"Sent faster than the form's minimum time.", "提交速度快于表单的最短填写时间。"},
	"spam-reason.challenge-missing":        {"No proof-of-work solution (the browser did not run the form's script, or a script posted directly).", "没有防机器人校验（浏览器没有运行表单的脚本，或脚本直接提交）。"},
	"spam-reason.challenge-malformed":      {"The proof-of-work solution was malformed.", "防机器人校验格式不正确。"},
	"spam-reason.challenge-forged":         {"The proof-of-work challenge was not issued by this server.", "防机器人校验的题目不是本服务器发出的。"},
	"spam-reason.challenge-expired":        {"The proof-of-work challenge had expired (the page was open a long time).", "防机器人校验的题目已过期（页面打开太久）。"},
	"spam-reason.challenge-wrong-form":     {"The proof-of-work challenge was for another form.", "防机器人校验的题目属于另一个表单。"},
	"spam-reason.challenge-wrong-solution": {"The proof-of-work solution was wrong.", "防机器人校验的答案不正确。"},
	"spam-reason.challenge-replayed":       {"The proof-of-work solution was used already by another submission.", "防机器人校验已被另一次提交用过。"},
}

func init() {
	for k, v := range spamReasonStrings {
		enStrings[k], zhStrings[k] = v[0], v[1]
	}
}
