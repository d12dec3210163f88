package export

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/formd/formd/internal/uploads/links"
)

// An export for people (Options.People, issue 34) is the table an
// organizer opens in a spreadsheet: the columns headed by the fields'
// labels and formd's own columns in words, in the chosen language; the
// status in words; the time in the organizer's zone, to the second; each
// file as its name and an absolute link; and a CSV starting with a UTF-8
// byte order mark, without which Excel on Windows shows Chinese as
// mojibake. The entry's key (the client's idempotency key) is left out:
// it means nothing to a person. The formula safety is the same as the
// machine table's (see the package comment): XLSX cells are typed, and
// CSV cells that start like a formula get a visible leading apostrophe —
// which is why XLSX is the format to recommend to people.

// BOM is the UTF-8 byte order mark an export for people starts its CSV
// with.
const BOM = "\uFEFF"

// peopleTime is a time as an export for people writes it (in its zone).
const peopleTime = "2006-01-02 15:04:05"

func isZh(lang string) bool {
	lang = strings.ToLower(lang)
	return lang == "zh" || strings.HasPrefix(lang, "zh-") || strings.HasPrefix(lang, "zh_")
}

// peopleWords are formd's own column headings and the statuses in words.
var peopleWords = map[bool]map[string]string{
	false: {
		"id": "Entry", "status": "Status", "received_at": "Received", "extra": "Other fields",
		"checked_in_at": "Checked in", "door": "Door",
		"stored": "Received", "waitlisted": "Waitlisted", "duplicate": "Duplicate", "rejected": "Refused (full)",
		"spam": "Spam", "dead-lettered": "Could not be processed", "cancelled": "Cancelled",
	},
	true: {
		"id": "编号", "status": "状态", "received_at": "提交时间", "extra": "其他内容",
		"checked_in_at": "签到时间", "door": "签到入口",
		"stored": "已收到", "waitlisted": "候补", "duplicate": "重复提交", "rejected": "名额已满，未收",
		"spam": "垃圾提交", "dead-lettered": "无法处理", "cancelled": "已取消",
	},
}

// word is formd's own heading or a status in the language, or the word
// itself when it has none.
func word(lang, w string) string {
	if s, ok := peopleWords[isZh(lang)][w]; ok {
		return s
	}
	return w
}

// zone is the options' time zone, UTC when none is set.
func (o Options) zone() *time.Location {
	if o.Zone == nil {
		return time.UTC
	}
	return o.Zone
}

// receivedHeading names the time column with its zone, so that a reader
// knows what the times are in.
func receivedHeading(opts Options) string {
	return word(opts.Lang, "received_at") + " (" + opts.zone().String() + ")"
}

// filesText is a file field's value (one {name, …, url} or a list of
// them, as withFiles makes it) as a cell: each file's name and link, one
// a line. Anything else is the value as text.
func filesText(raw json.RawMessage) string {
	var list []links.File
	if len(raw) > 0 && raw[0] == '{' {
		var one links.File
		if json.Unmarshal(raw, &one) != nil {
			return text(raw)
		}
		list = []links.File{one}
	} else if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &list) != nil {
			return text(raw)
		}
	} else {
		return text(raw)
	}
	lines := make([]string, 0, len(list))
	for _, f := range list {
		if f.Name == "" && f.URL == "" {
			return text(raw)
		}
		lines = append(lines, strings.TrimSpace(f.Name+" "+f.URL))
	}
	return strings.Join(lines, "\n")
}
