package email

import (
	"strings"
	"time"

	"github.com/formd/formd/internal/langpref"
)

// lang is one language of the mails: its tag for the html lang attribute
// and the words and formats that the templates get ready-made, so that the
// templates hold only sentences.
type lang struct {
	tag string
	// sep joins the values of a multi-valued field.
	sep string
	// yes and no show a checkbox.
	yes, no string
	// owner words a status for the form's owner, person for the person
	// who sent the entry (a confirmation says only what is true for them).
	owner, person map[string]string
	// date is the layout of a day and time; clock of a time alone;
	// dayOnly of a day alone.
	date, clock, dayOnly string
}

var english = lang{
	tag: "en", sep: ", ", yes: "Yes", no: "No",
	owner: map[string]string{
		"stored":     "Stored",
		"waitlisted": "On the waitlist",
		"promoted":   "Promoted from the waitlist",
		"cancelled":  "Cancelled",
		"pending":    "Pending review",
		"approved":   "Approved",
		"declined":   "Declined",
	},
	person: map[string]string{
		"approved":   "Your entry has been approved by the organizers: your place is confirmed.",
		"declined":   "The organizers have not accepted your entry.",
		"pending":    "We have received your entry; the organizers review each one and will tell you.",
		"stored":     "We have received your entry.",
		"waitlisted": "We have received your entry. Every place is taken for now, so you are on the waitlist.",
		"promoted":   "A place became free: you have moved from the waitlist to a place.",
		"cancelled":  "Your entry has been cancelled.",
	},
	date:    "2 Jan 2006 15:04:05",
	clock:   "15:04:05",
	dayOnly: "2 January 2006",
}

var chinese = lang{
	tag: "zh-CN", sep: "、", yes: "是", no: "否",
	owner: map[string]string{
		"stored":     "已保存",
		"waitlisted": "候补",
		"promoted":   "已从候补转正",
		"cancelled":  "已取消",
		"pending":    "待审核",
		"approved":   "已通过",
		"declined":   "未通过",
	},
	person: map[string]string{
		"approved":   "主办方已通过您的提交：您的名额已确认。",
		"declined":   "主办方未通过您的提交。",
		"pending":    "我们已收到您的提交；主办方会逐一审核并通知您。",
		"stored":     "我们已收到您的提交。",
		"waitlisted": "我们已收到您的提交。目前名额已满，您在候补名单中。",
		"promoted":   "有名额空出：您已从候补名单转为正式名额。",
		"cancelled":  "您的提交已取消。",
	},
	date:    "2006年1月2日 15:04:05",
	clock:   "15:04:05",
	dayOnly: "2006年1月2日",
}

// pickLang gives Chinese for any "zh" tag (zh, zh-CN, zh_TW, zh-Hans, …)
// and English for everything else, the two languages formd speaks.
// Traditional-script tags get Simplified Chinese, as on the hosted pages:
// closer to them than English.
func pickLang(tag string) lang {
	if langpref.Of(strings.TrimSpace(tag)) == langpref.Chinese {
		return chinese
	}
	return english
}

// ownerStatus words a status for the owner; one it does not know is shown
// as it is, which is still true.
func (l lang) ownerStatus(s string) string {
	if w, ok := l.owner[s]; ok {
		return w
	}
	return s
}

// when shows a moment in loc with its UTC offset, which every reader can
// place, unlike zone abbreviations (CST is China, Cuba and US Central).
func (l lang) when(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	t = t.In(loc)
	return t.Format(l.date) + " " + zone(t)
}

// day shows the day of a moment in loc.
func (l lang) day(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format(l.dayOnly)
}

// span shows a window: one date when both ends fall on the same day.
func (l lang) span(a, b time.Time, loc *time.Location) string {
	a, b = a.In(loc), b.In(loc)
	if sameDay(a, b) {
		return a.Format(l.date) + "–" + b.Format(l.clock) + " " + zone(a)
	}
	return a.Format(l.date) + " – " + b.Format(l.date) + " " + zone(a)
}

// at shows a moment within a window: the time alone on the window's first
// day, the whole date otherwise.
func (l lang) at(t, start time.Time, loc *time.Location) string {
	t, start = t.In(loc), start.In(loc)
	if sameDay(t, start) {
		return t.Format(l.clock)
	}
	return t.Format(l.date)
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

func zone(t time.Time) string {
	if _, off := t.Zone(); off == 0 {
		return "UTC"
	}
	return "UTC" + t.Format("-07:00")
}
