package email

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var (
	shanghai   = time.FixedZone("CST", 8*3600)
	receivedAt = time.Date(2027, 3, 1, 1, 5, 3, 0, time.UTC) // 09:05:03 in Shanghai
	receipt    = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	fieldsIn   = []FieldValue{
		{"Name", "Li <b>Lei</b>"},
		{"Slots", []string{"morning", "afternoon"}},
		{"Tickets", json.RawMessage(`2`)},
		{"Newsletter", true},
		{"Note", "first line\nStatus: cancelled"},
		{"Phone", nil},
	}
)

func entryView(status string) EntryView {
	return EntryView{
		FormID: "spring-fair-2027", FormTitle: "Spring fair", Status: status,
		ID: "01JQ7Z", Key: "k-42", ReceivedAt: receivedAt, Receipt: receipt,
		Fields: fieldsIn, ConsoleURL: "https://formd.example.org/admin/forms/spring-fair-2027/entries/01JQ7Z",
	}
}

func digestView(count, rows int) DigestView {
	v := DigestView{
		FormID: "spring-fair-2027", FormTitle: "Spring fair", Count: count,
		Start: receivedAt, End: receivedAt.Add(time.Minute),
		ConsoleURL: "https://formd.example.org/admin/forms/spring-fair-2027/entries",
	}
	for i := range rows {
		v.Entries = append(v.Entries, DigestEntry{
			ID: fmt.Sprint("e", i), ReceivedAt: receivedAt.Add(time.Duration(i) * time.Second), Status: "stored",
			Fields: []FieldValue{{"Name", fmt.Sprintf("person-%03d", i)}, {"Phone", "+86 138 0000 0000"}, {"Secret", "third-field"}},
		})
	}
	return v
}

// ticketView is a stored entry's confirmation on a form with check-in.
func ticketView(manage string) ConfirmationView {
	v := confirmationView("stored")
	v.ManageURL, v.TicketCode = manage, "R5ZCW-A0ZCT"
	return v
}

func confirmationView(status string) ConfirmationView {
	return ConfirmationView{FormTitle: "Spring fair", Status: status, ReceivedAt: receivedAt, Receipt: receipt, Fields: fieldsIn}
}

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		kind     Kind
		lang     string
		view     any
		subject  string
		text     []string // substrings of the plain-text body
		html     []string // substrings of the HTML body
		notText  []string
		notHTML  []string
		loc      *time.Location
		wantLang string
	}{
		{
			name: "entry en", kind: Entry, lang: "en", view: entryView("stored"), loc: shanghai,
			subject: "New entry: Spring fair",
			text: []string{
				"Status: Stored\n", "Received at: 1 Mar 2027 09:05:03 UTC+08:00\n", "Receipt: " + receipt,
				"Name: Li <b>Lei</b>\nSlots: morning, afternoon\nTickets: 2\nNewsletter: Yes\nNote: first line\n    Status: cancelled\nPhone: —\n",
				"Open it in the console: https://formd.example.org/admin/forms/spring-fair-2027/entries/01JQ7Z",
				"Entry 01JQ7Z, key k-42, form spring-fair-2027.",
			},
			html: []string{
				`<html lang="en">`, "<title>New entry: Spring fair</title>", "<strong>Stored</strong>",
				"1 Mar 2027 09:05:03 UTC&#43;08:00", "Li &lt;b&gt;Lei&lt;/b&gt;", ">morning, afternoon<",
				`href="https://formd.example.org/admin/forms/spring-fair-2027/entries/01JQ7Z"`, receipt,
			},
			notHTML: []string{"<b>Lei"},
		},
		{
			name: "entry zh waitlisted", kind: Entry, lang: "zh-CN", view: entryView("waitlisted"), loc: shanghai,
			subject: "新候补：Spring fair",
			text:    []string{"状态：候补\n", "收到时间：2027年3月1日 09:05:03 UTC+08:00\n", "回执码：" + receipt, "Slots：morning、afternoon\n", "Newsletter：是\n", "在管理后台查看："},
			html:    []string{`<html lang="zh-CN">`, "<strong>候补</strong>", "在管理后台查看"},
		},
		{name: "entry en promoted", kind: Entry, lang: "en", view: entryView("promoted"), subject: "Promoted from the waitlist: Spring fair",
			text: []string{"Status: Promoted from the waitlist", "Received at: 1 Mar 2027 01:05:03 UTC\n"}},
		{name: "entry zh cancelled", kind: Entry, lang: "zh", view: entryView("cancelled"), subject: "提交已取消：Spring fair", text: []string{"状态：已取消"}},
		{name: "entry, unknown status shown as it is", kind: Entry, lang: "en", view: entryView("rejected"), subject: "Entry (rejected): Spring fair", text: []string{"Status: rejected"}},
		{
			name: "entry without console link or key", kind: Entry, lang: "en", loc: shanghai,
			view:    func() *EntryView { v := entryView("stored"); v.ConsoleURL, v.Key = "", ""; return &v }(),
			subject: "New entry: Spring fair", text: []string{"Entry 01JQ7Z, form spring-fair-2027."},
			notText: []string{"console", "key"}, notHTML: []string{"<a "},
		},
		{
			name: "digest en", kind: Digest, lang: "en", view: digestView(3000, 60), loc: shanghai,
			subject: "Spring fair: 3000 entries, 1 Mar 2027 09:05:03–09:06:03 UTC+08:00",
			text: []string{
				"3000 entries arrived in 1 Mar 2027 09:05:03–09:06:03 UTC+08:00.",
				"Received at · Status · Name · Phone\n- 09:05:03 · Stored · person-000 · +86 138 0000 0000\n",
				"person-049", "… and 2950 more.", "See them all in the console: https://formd.example.org/admin/forms/spring-fair-2027/entries",
			},
			notText: []string{"person-050", "third-field", "Secret"},
			html: []string{
				`<th scope="col"`, ">Received at</th>", ">Name</th>", ">Phone</th>", ">person-049<", "… and 2950 more.",
				`href="https://formd.example.org/admin/forms/spring-fair-2027/entries"`,
			},
			notHTML: []string{"person-050", "third-field"},
		},
		{
			name: "digest zh", kind: Digest, lang: "zh-Hans", view: digestView(0, 3), loc: shanghai,
			subject: "Spring fair：2027年3月1日 09:05:03–09:06:03 UTC+08:00 收到 3 条提交",
			text:    []string{"共收到 3 条提交", "收到时间 · 状态 · Name · Phone\n- 09:05:03 · 已保存 · person-000", "在管理后台查看全部："},
			notText: []string{"另有"},
			html:    []string{">收到时间</th>", ">状态</th>", "<strong>3 条提交</strong>"},
		},
		{name: "digest en, one entry", kind: Digest, lang: "en", view: digestView(1, 1), subject: "Spring fair: 1 entry, 1 Mar 2027 01:05:03–01:06:03 UTC"},
		{
			name: "confirmation en", kind: Confirmation, lang: "en-GB", view: confirmationView("stored"), loc: shanghai,
			subject: "Spring fair: we have received your entry",
			text: []string{
				"We have received your entry.\nReceived at: 1 Mar 2027 09:05:03 UTC+08:00\n", "What you sent:\nName: Li <b>Lei</b>\n",
				"Your receipt: " + receipt + "\nKeep this code: it proves what formd received.\n", "If that was not you, you can ignore it.",
			},
			html:    []string{"Keep this code: it proves what formd received.", receipt, "Li &lt;b&gt;Lei&lt;/b&gt;"},
			notText: []string{"01JQ7Z", "k-42"},
		},
		{name: "confirmation en waitlisted", kind: Confirmation, lang: "en", view: confirmationView("waitlisted"), subject: "Spring fair: you are on the waitlist", text: []string{"you are on the waitlist."}},
		{name: "confirmation en promoted", kind: Confirmation, lang: "fr", view: confirmationView("promoted"), subject: "Spring fair: you have a place now", text: []string{"you have moved from the waitlist to a place."}},
		{name: "confirmation en cancelled", kind: Confirmation, lang: "", view: confirmationView("cancelled"), subject: "Spring fair: your entry was cancelled"},
		{
			name: "confirmation zh", kind: Confirmation, lang: "zh_TW", view: confirmationView("stored"), loc: shanghai,
			subject: "Spring fair：我们已收到您的提交",
			text:    []string{"我们已收到您的提交。\n收到时间：2027年3月1日 09:05:03 UTC+08:00\n", "您提交的内容：\nName：Li <b>Lei</b>\n", "您的回执码：" + receipt + "\n请保存此回执码：它可以证明 formd 收到的内容。"},
			html:    []string{`<html lang="zh-CN">`, "请保存此回执码：它可以证明 formd 收到的内容。", "您提交的内容"},
		},
		{
			name: "confirmation en with a ticket", kind: Confirmation, lang: "en", view: ticketView("https://forms.example.org/e/tok"),
			text: []string{"Your ticket for the door: R5ZCW-A0ZCT\nAt the entrance, show the QR code on your registration page (https://forms.example.org/e/tok), or read out this code.\n"},
			html: []string{`Your ticket for the door: <strong style="font-family:monospace;font-size:20px;letter-spacing:2px;">R5ZCW-A0ZCT</strong>`,
				`show the QR code on <a href="https://forms.example.org/e/tok">your registration page</a>, or read out this code.`},
			notHTML: []string{"<img"}, subject: "Spring fair: we have received your entry",
		},
		{
			name: "confirmation en with a ticket, no public URL", kind: Confirmation, lang: "en", view: ticketView(""),
			text:    []string{"Your ticket for the door: R5ZCW-A0ZCT\nAt the entrance, show the QR code on your registration page, or read out this code.\n"},
			html:    []string{"show the QR code on your registration page, or read out this code."},
			subject: "Spring fair: we have received your entry",
		},
		{
			name: "confirmation zh with a ticket", kind: Confirmation, lang: "zh", view: ticketView("https://forms.example.org/e/tok"),
			text: []string{"您的入场签到码：R5ZCW-A0ZCT\n入场时请出示报名页面上的二维码（https://forms.example.org/e/tok），或报出此签到码。\n"},
			html: []string{`您的入场签到码：<strong style="font-family:monospace;font-size:20px;letter-spacing:2px;">R5ZCW-A0ZCT</strong>`,
				`入场时请出示<a href="https://forms.example.org/e/tok">报名页面</a>上的二维码，或报出此签到码。`},
			subject: "Spring fair：我们已收到您的提交",
		},
		{name: "confirmation en without a ticket", kind: Confirmation, lang: "en", view: confirmationView("stored"), subject: "Spring fair: we have received your entry",
			notText: []string{"ticket", "QR"}, notHTML: []string{"ticket", "QR"}},
		{
			name: "erasure en", kind: Erasure, lang: "en", loc: shanghai,
			view:    ErasureView{FormTitle: "Spring fair", ErasedAt: time.Date(2027, 3, 1, 17, 0, 0, 0, time.UTC)},
			subject: "Spring fair: your data has been erased",
			text:    []string{"Your registration for \"Spring fair\" and your answers have been erased on 2 March 2027.\n", "it is deleted once the mail is sent"},
			html:    []string{`<html lang="en">`, "Your registration for “Spring fair” and your answers have been erased on 2 March 2027."},
		},
		{
			name: "erasure zh", kind: Erasure, lang: "zh-CN", loc: shanghai,
			view:    &ErasureView{FormTitle: "春季集市", ErasedAt: time.Date(2027, 3, 1, 15, 0, 0, 0, time.UTC)},
			subject: "春季集市：您的数据已删除",
			text:    []string{"您在“春季集市”的报名和您的答案已于 2027年3月1日 删除。\n"},
			html:    []string{`<html lang="zh-CN">`, "您在“春季集市”的报名和您的答案已于 2027年3月1日 删除。"},
		},
		{name: "confirmation zh waitlisted", kind: Confirmation, lang: "zh", view: confirmationView("waitlisted"), subject: "Spring fair：您在候补名单中", text: []string{"您在候补名单中。"}},
		{name: "confirmation zh promoted", kind: Confirmation, lang: "ZH-cn", view: confirmationView("promoted"), subject: "Spring fair：您已获得名额", text: []string{"您已从候补名单转为正式名额。"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			subject, text, html, err := Render(tc.kind, tc.lang, tc.view, tc.loc)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if subject != tc.subject {
				t.Errorf("subject %q, want %q", subject, tc.subject)
			}
			wantParts(t, "text", text, tc.text, tc.notText)
			wantParts(t, "html", html, tc.html, tc.notHTML)
		})
	}
}

// wantParts checks that the part (text or html) of a message has each
// string of has and none of hasNot.
func wantParts(t *testing.T, part, got string, has, hasNot []string) {
	t.Helper()
	for _, s := range has {
		if !strings.Contains(got, s) {
			t.Errorf("%s lacks %q:\n%s", part, s, got)
		}
	}
	for _, s := range hasNot {
		if strings.Contains(got, s) {
			t.Errorf("%s has %q:\n%s", part, s, got)
		}
	}
}

// TestRenderEscapes: what a stranger or a careless owner typed stays text.
func TestRenderEscapes(t *testing.T) {
	t.Parallel()
	v := entryView("stored")
	v.FormTitle = "Fair\r\nBcc: x@example.org <img src=x onerror=alert(1)>"
	v.Fields = []FieldValue{{`<i>Label</i>`, `"><script>alert(1)</script>`}}
	v.ConsoleURL = "javascript:alert(1)"
	subject, _, html, err := Render(Entry, "en", v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(subject, "\r\n") {
		t.Errorf("subject %q has a line break", subject)
	}
	wantParts(t, "html", html, nil, []string{"<script>", "<img", "<i>", "javascript:"})
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind Kind
		view any
		want error
	}{
		{"unknown kind", Kind("newsletter"), entryView("stored"), ErrUnknownKind},
		{"view of another kind", Entry, confirmationView("stored"), ErrViewType},
		{"nil view", Digest, nil, ErrViewType},
		{"nil pointer", Entry, (*EntryView)(nil), ErrViewType},
		{"confirmation of spam", Confirmation, confirmationView("spam"), ErrUnknownStatus},
		{"confirmation without status", Confirmation, confirmationView(""), ErrUnknownStatus},
		{"erasure with another view", Erasure, confirmationView("stored"), ErrViewType},
	} {
		for _, lang := range []string{"en", "zh"} {
			if _, _, _, err := Render(tc.kind, lang, tc.view, nil); !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: Render = %v, want %v", tc.name, lang, err, tc.want)
			}
		}
	}
}

func TestValueShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      any
		en, zh string
	}{
		{"text", "text", "text"},
		{"", "—", "—"},
		{nil, "—", "—"},
		{[]string{"a", "b"}, "a, b", "a、b"},
		{[]any{"a", 2.5, true}, "a, 2.5, Yes", "a、2.5、是"},
		{false, "No", "否"},
		{3.0, "3", "3"},
		{json.Number("12345678901234567890"), "12345678901234567890", "12345678901234567890"},
		{json.RawMessage(`["x","y"]`), "x, y", "x、y"},
		{json.RawMessage(`12345678901234567890`), "12345678901234567890", "12345678901234567890"},
		{json.RawMessage(`"quoted"`), "quoted", "quoted"},
		{json.RawMessage(`null`), "—", "—"},
		{42, "42", "42"},
	} {
		if got := english.value(tc.v); got != tc.en {
			t.Errorf("english.value(%#v) = %q, want %q", tc.v, got, tc.en)
		}
		if got := chinese.value(tc.v); got != tc.zh {
			t.Errorf("chinese.value(%#v) = %q, want %q", tc.v, got, tc.zh)
		}
	}
}

func TestTimesAcrossDays(t *testing.T) {
	t.Parallel()
	start := time.Date(2027, 3, 1, 23, 59, 30, 0, time.UTC)
	end := start.Add(time.Minute)
	if got, want := english.span(start, end, time.UTC), "1 Mar 2027 23:59:30 – 2 Mar 2027 00:00:30 UTC"; got != want {
		t.Errorf("span = %q, want %q", got, want)
	}
	if got, want := english.at(end, start, time.UTC), "2 Mar 2027 00:00:30"; got != want {
		t.Errorf("at = %q, want %q", got, want)
	}
	if got, want := chinese.when(start, time.FixedZone("", -5*3600)), "2027年3月1日 18:59:30 UTC-05:00"; got != want {
		t.Errorf("when = %q, want %q", got, want)
	}
}
