package hosted

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/formd/formd/internal/langpref"
)

// lang is a language the hosted pages speak: its tag for Text.For and the
// html lang attribute, and its strings.
type lang struct {
	Tag string
	T   map[string]string
	// Err translates validation codes, for the SDK (data-err-* attributes)
	// and for a failed plain post; empty for English, where the server's
	// own message already names the bound. A text is a template: {limit}
	// is the bound the error carries, and a part in [brackets] is kept
	// only when it carries one (as fieldText in the SDK reads it).
	Err map[string]string
}

var (
	english = lang{Tag: "en", T: enStrings}
	chinese = lang{Tag: "zh-CN", T: zhStrings, Err: zhErrors}
)

// queryLang is the language a ?lang= names.
func queryLang(v string) (lang, bool) {
	switch strings.ToLower(v) {
	case "zh", "zh-cn", "zh-hans":
		return chinese, true
	case "en":
		return english, true
	}
	return lang{}, false
}

// pickLang chooses English or Simplified Chinese: an explicit ?lang= first
// (so a link can fix the language), then the Accept-Language preference
// with the highest q, then English.
func pickLang(r *http.Request) lang {
	if l, ok := queryLang(r.URL.Query().Get("lang")); ok {
		return l
	}
	// A plain post of the form, and the result page it leads to, come
	// from the page the person read: its ?lang= still holds, so the errors
	// and the answer are in the page's language, not the browser's.
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host && strings.HasPrefix(ref.Path, "/f/") {
		if l, ok := queryLang(ref.Query().Get("lang")); ok {
			return l
		}
	}
	// Traditional-script tags still get Simplified Chinese: closer to
	// them than English, and the only Chinese the pages have.
	if langpref.Accept(r.Header.Get("Accept-Language")) == langpref.Chinese {
		return chinese
	}
	return english
}

var enStrings = map[string]string{
	"required-note": "Fields marked * are required.",
	"submit":        "Submit",
	"choose":        "Choose…",
	"honeypot":      "Leave this field empty",
	"closed":        "This form is not taking submissions now.",
	"opens":         "It opens on %s.",
	"closed-at":     "It closed on %s.",
	"left":          "%d places left.",
	"left-one":      "1 place left.",
	"full-wait":     "Every place is taken: new registrations join the waitlist.",
	"full":          "Sorry, every place is taken.",
	// A full option of a select whose options have places of their own.
	"option-full-wait": "%s — full, waitlist",
	"option-full":      "%s — full",
	// Pages: a step without a title, and the step script's texts.
	"step":          "Step %d",
	"step-progress": "Step %d of %d",
	"step-next":     "Next",
	"step-back":     "Back",
	"not-found":     "There is no form at this address.",
	"back":          "Back to the form",
	// The SDK's states (data-msg-*).
	"sending":    "Sending…",
	"saved":      "Saved on this device. It will be sent when the connection is back: keep this page open, or come back to it later.",
	"unsaved":    "Not saved on this device: keep this page open until it is sent.",
	"received":   "Received. Thank you!",
	"waitlisted": "Received: you are on the waitlist.",
	"pending":    "Received: the organizers review each registration, and you will hear from them.",
	"declined":   "This registration was not accepted by the organizers.",
	"duplicate":  "You are already registered.",
	"invalid":    "Please correct the marked fields.",
	"preview":    "Preview: this is how the form will look. Nothing sent from here is kept.",
	"preview-ok": "Preview: these answers would be accepted. Nothing was kept.",
	"full-state": "Sorry, every place is taken.",
	"failed":     "The form could not be sent. Please reload the page and try again.",
	// The result page, by status.
	"stored":          "Received. Thank you!",
	"processing":      "Received: it is being processed. This page updates by itself.",
	"rejected":        "Sorry, every place was taken before your registration arrived.",
	"cancelled":       "This registration was cancelled.",
	"my-registration": "My registration",
	"your-answers":    "Your answers",
	"received-at":     "Received at",
	"receipt":         "Receipt (the fingerprint of what was received):",
	"position":        "You are number %d on the waitlist.",
	"cancel-confirm":  "Yes, I give my place back (this cannot be undone).",
	"cancel-entry":    "Cancel my registration",
	"unknown":         "There is no record of this submission. Please send the form again.",
	// The participant's link on the confirmation (the SDK's data-msg-manage
	// and the result page).
	"manage":      "My registration: see, change or cancel it",
	"manage-keep": "Keep this link to yourself: whoever has it can see and change your registration.",
	// Drafts (drafts.js reads the draft-* texts from data-draft-* attributes).
	"draft-note":       "This form keeps a draft of your answers as you type: you can finish it later, on any device, with the link shown below.",
	"draft-nojs":       "Saving a draft needs JavaScript, which is off: this form can still be sent, but what you type is kept only once you send it.",
	"draft-files":      "Files are not kept in a draft: choose them again before you send.",
	"draft-link":       "To finish later on any device, keep this link (whoever has it can open your draft):",
	"draft-saving":     "Saving your draft…",
	"draft-saved":      "Draft saved at {time}.",
	"draft-retrying":   "Draft not saved: the server did not answer. Trying again…",
	"draft-conflict":   "This draft was changed in another window. Nothing here was saved over it: reload the page to continue with the newer version.",
	"draft-submitted":  "This draft was sent already: it cannot be changed here.",
	"draft-gone":       "This draft link opens nothing: it expired, was sent, or is mistyped. What you type now starts a new draft.",
	"draft-failed":     "The draft could not be saved.",
	"draft-opening":    "Opening your draft…",
	"draft-resumed":    "Your draft is open. Changes are saved as you type.",
	"draft-mail":       "E-mail me this link",
	"mail-sending":     "Sending the link to the address in this form…",
	"mail-sent":        "The link was sent to the address in this form.",
	"mail-none":        "Type your e-mail address in this form first; then ask again.",
	"mail-limited":     "The link was e-mailed several times in the last hour: wait, or keep the link above.",
	"mail-failed":      "The link could not be e-mailed: keep the link above.",
	"change-answers":   "Change my answers",
	"change-save":      "Save my changes",
	"edit-until":       "Changes are possible until %s.",
	"changed":          "Your changes are saved.",
	"unchanged":        "Nothing was changed: these are the answers already saved.",
	"change-full":      "%s has no place left: nothing was changed, and your place is kept.",
	"change-stale":     "Your registration was changed elsewhere (another tab or device): here it is as it is now. Make your change again.",
	"change-closed":    "Changes are closed: nothing was changed.",
	"change-duplicate": "These answers are another registration's: nothing was changed.",
	"change-failed":    "Your change could not be saved now: nothing was changed. Please try again.",
	"erasure":          "Erase my data",
	"erasure-confirm":  "Yes, erase my registration and my answers (this cannot be undone).",
	"erasure-ask":      "Ask for my data to be erased",
	"erasure-pending":  "You asked for your data to be erased on %s. The organizer will erase it; this link then stops working.",
	"erasure-done":     "Your data has been erased. This link no longer opens anything.",
	"your-ticket":      "Your ticket",
	"ticket-help":      "Show this code at the door, or read out the short code.",
	"ticket-code":      "Short code:",
}

var zhStrings = map[string]string{
	"required-note":    "标有 * 的为必填项。",
	"submit":           "提交",
	"choose":           "请选择…",
	"honeypot":         "此项请留空",
	"closed":           "此表单当前不接受提交。",
	"opens":            "开放时间：%s。",
	"closed-at":        "已于 %s 截止。",
	"left":             "还剩 %d 个名额。",
	"left-one":         "还剩 1 个名额。",
	"full-wait":        "名额已满：新的报名将进入候补名单。",
	"full":             "抱歉，名额已满。",
	"option-full-wait": "%s（已满，可候补）",
	"option-full":      "%s（已满）",
	"step":             "第 %d 步",
	"step-progress":    "第 %d 步，共 %d 步",
	"step-next":        "下一步",
	"step-back":        "上一步",
	"not-found":        "此地址没有表单。",
	"back":             "返回表单",
	"sending":          "发送中…",
	"saved":            "已保存在本机：网络恢复后会自动发送。请保持此页面打开，或稍后回到此页面。",
	"unsaved":          "未能保存在本机：请保持此页面打开，直到发送完成。",
	"received":         "已收到，谢谢！",
	"waitlisted":       "已收到：您已在候补名单中。",
	"pending":          "已收到：主办方会逐一审核报名，并通知您结果。",
	"declined":         "主办方未通过此报名。",
	"duplicate":        "您已经报名过了。",
	"invalid":          "需要修改：请修改标出的内容。",
	"preview":          "预览：表单发布后将是这个样子。在这里提交的内容不会保存。",
	"preview-ok":       "预览：这些内容可以通过。没有保存任何内容。",
	"full-state":       "抱歉，名额已满。",
	"failed":           "表单无法提交，请刷新页面后重试。",
	"stored":           "已收到，谢谢！",
	"processing":       "已收到，正在处理。此页面会自动更新。",
	"rejected":         "抱歉，您的报名到达前名额已满。",
	"cancelled":        "此报名已取消。",
	"my-registration":  "我的报名",
	"your-answers":     "您的填写内容",
	"received-at":      "收到时间",
	"receipt":          "回执（所收内容的指纹）：",
	"position":         "您在候补名单中排第 %d 位。",
	"cancel-confirm":   "是的，我放弃名额（无法撤销）。",
	"cancel-entry":     "取消我的报名",
	"change-answers":   "修改我的答案",
	"change-save":      "保存修改",
	"edit-until":       "在 %s 之前可以修改。",
	"changed":          "您的修改已保存。",
	"unchanged":        "没有任何修改：这些就是已保存的答案。",
	"change-full":      "%s 已无名额：没有修改任何内容，您的名额保留不变。",
	"change-stale":     "您的报名已在别处（另一个标签页或设备）修改过：下面是当前内容。请重新修改。",
	"change-closed":    "修改已截止：没有修改任何内容。",
	"change-duplicate": "这些答案与另一份报名相同：没有修改任何内容。",
	"change-failed":    "暂时无法保存您的修改：没有修改任何内容。请重试。",
	"erasure":          "删除我的数据",
	"erasure-confirm":  "是的，删除我的报名和答案（无法撤销）。",
	"erasure-ask":      "申请删除我的数据",
	"erasure-pending":  "您已于 %s 申请删除数据。组织者将予以删除，之后此链接将失效。",
	"erasure-done":     "您的数据已删除。此链接不再打开任何内容。",
	"unknown":          "没有找到这次提交的记录，请重新提交表单。",
	"manage":           "我的报名：查看、修改或取消",
	"manage-keep":      "请勿把此链接告诉他人：拥有此链接的人可以查看和修改您的报名。",
	"draft-note":       "此表单会在您填写时保存草稿：您可以稍后在任何设备上，用下方显示的链接继续填写。",
	"draft-nojs":       "保存草稿需要 JavaScript，而它已关闭：表单仍可提交，但填写的内容只在提交后才会保存。",
	"draft-files":      "草稿不保存文件：提交前请重新选择文件。",
	"draft-link":       "如需稍后在任何设备上继续填写，请保存此链接（任何拥有此链接的人都能打开您的草稿）：",
	"draft-saving":     "正在保存草稿…",
	"draft-saved":      "草稿已于 {time} 保存。",
	"draft-retrying":   "草稿未保存：服务器没有响应，正在重试…",
	"draft-conflict":   "此草稿已在另一个窗口中修改。这里的内容没有覆盖它：请刷新页面，继续填写较新的版本。",
	"draft-submitted":  "此草稿已经提交，不能在这里修改。",
	"draft-gone":       "此草稿链接无法打开：可能已过期、已提交或有误。现在填写的内容将保存为新的草稿。",
	"draft-failed":     "草稿无法保存。",
	"draft-opening":    "正在打开草稿…",
	"draft-resumed":    "草稿已打开，修改会随时保存。",
	"draft-mail":       "将此链接发到我的邮箱",
	"mail-sending":     "正在把链接发送到表单中填写的邮箱…",
	"mail-sent":        "链接已发送到表单中填写的邮箱。",
	"mail-none":        "请先在表单中填写您的电子邮箱，然后再试。",
	"mail-limited":     "过去一小时内此链接已多次发送：请稍后再试，或保存上方的链接。",
	"mail-failed":      "链接未能发送：请保存上方的链接。",
	"your-ticket":      "您的入场券",
	"ticket-help":      "入场时出示此二维码，或报出短码。",
	"ticket-code":      "短码：",
}

// zhErrors are the validation codes of form.Validate in Chinese, the same
// texts as the SDK's messages.js: specific, with the bound where the
// error carries one ("内容太长，最多 100 个字符。").
var zhErrors = map[string]string{
	"required":       "此项必填。",
	"invalid-value":  "内容无效。",
	"invalid-email":  "请填写有效的电子邮箱。",
	"invalid-phone":  "请填写有效的电话号码。",
	"invalid-option": "请从选项中选择。",
	"invalid-date":   "请按 年-月-日 填写日期。",
	"not-a-number":   "请填写数字。",
	"not-an-integer": "请填写整数。",
	"too-small":      "数值太小[，最小为 {limit}]。",
	"too-large":      "数值太大[，最大为 {limit}]。",
	"too-short":      "内容太短[，至少 {limit} 个字符]。",
	"too-long":       "内容太长[，最多 {limit} 个字符]。",
	"too-early":      "日期太早[，不能早于 {limit}]。",
	"too-late":       "日期太晚[，不能晚于 {limit}]。",
	"too-few":        "选择的项目太少[，至少选 {limit} 项]。",
	"too-many":       "选择的项目太多[，最多选 {limit} 项]。",
	"pattern":        "格式不正确。",
	"unknown-field":  "此表单没有这一项。",
}

// fillLimit renders an Err template for one error: the bracketed parts
// with {limit} filled in when the error has a bound, without them when
// it has none.
func fillLimit(t, limit string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(t, '[')
		if open < 0 {
			break
		}
		end := strings.IndexByte(t[open:], ']')
		if end < 0 {
			break
		}
		b.WriteString(t[:open])
		if limit != "" {
			b.WriteString(t[open+1 : open+end])
		}
		t = t[open+end+1:]
	}
	b.WriteString(t)
	return strings.ReplaceAll(b.String(), "{limit}", limit)
}
