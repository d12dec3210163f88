package email

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"
)

// Kind is a kind of mail formd sends. Its value is a short stable word, so
// that an outbox row can store it.
type Kind string

// The kinds of mail.
const (
	// Entry tells the form's owner about one entry (new, promoted or
	// cancelled); its view is EntryView.
	Entry Kind = "entry"
	// Digest tells the owner about many entries of one form in a window,
	// one mail instead of one per entry under a peak; its view is
	// DigestView.
	Digest Kind = "digest"
	// Confirmation tells the person who sent an entry what formd received;
	// its view is ConfirmationView.
	Confirmation Kind = "confirmation"
	// Erasure tells the person who asked for their entry to be erased
	// that it is done; its view is ErasureView. It says nothing of what
	// they sent: that is gone.
	Erasure Kind = "erasure"
)

// MaxDigestRows is how many entries a digest lists; the rest are counted
// ("and 2950 more") and are in the console, so that a peak of thousands
// of entries still makes a mail of readable size.
const MaxDigestRows = 50

// digestValueRunes caps a value in a digest's table, which shows a glimpse
// of each entry, not all of it.
const digestValueRunes = 60

// FieldValue is one field of an entry as a mail shows it: the field's
// label in the mail's language and the value that was submitted.
type FieldValue struct {
	Label string
	// Value is the value as decoded from the entry's JSON data, or that
	// JSON itself: a string; a []string or []any (several values, joined
	// in the mail's language); a bool (a checkbox: Yes or No); a number or
	// json.Number; a json.RawMessage; nil when empty.
	Value any
}

// EntryView is what the owner's mail about one entry shows.
type EntryView struct {
	FormID    string
	FormTitle string
	// Status is the event's word: stored, waitlisted, promoted or
	// cancelled. Another word is shown as it is.
	Status     string
	ID         string
	Key        string
	ReceivedAt time.Time
	// Receipt is the entry's fingerprint in hex, as in the status document.
	Receipt string
	// Fields are the form's fields in the form's order.
	Fields []FieldValue
	// ConsoleURL links to the entry in the console; empty leaves the link
	// out (for example when formd does not know its public address).
	ConsoleURL string
	// Files are the entry's files with signed links (files.go).
	Files []FileLink
}

// DigestView is what the owner's digest of one form's entries in a window
// shows.
type DigestView struct {
	FormID    string
	FormTitle string
	// Count is how many entries arrived in the window; it may be more than
	// len(Entries), as only MaxDigestRows are listed anyway.
	Count int
	// Start and End bound the window.
	Start, End time.Time
	// Entries are the window's entries, oldest first.
	Entries []DigestEntry
	// ConsoleURL links to the form's submission list in the console;
	// empty leaves the link out.
	ConsoleURL string
}

// DigestEntry is one row of a digest.
type DigestEntry struct {
	ID         string
	ReceivedAt time.Time
	// Status is a word as in EntryView.Status.
	Status string
	// Fields are the entry's fields in the form's order; the digest shows
	// the first two, with the first entry's labels as column headings.
	Fields []FieldValue
}

// ConfirmationView is what the person's confirmation shows: only what
// they sent and what formd did with it.
type ConfirmationView struct {
	FormTitle string
	// Status is stored (received), waitlisted, promoted (from the
	// waitlist) or cancelled; Render refuses any other, because a
	// confirmation must be true.
	Status     string
	ReceivedAt time.Time
	Receipt    string
	Fields     []FieldValue
	// ManageURL is the participant's link (an absolute URL built from
	// --public-url), where they see, change or cancel their entry; ""
	// without a public URL (a mail cannot carry a relative link).
	ManageURL string
	// TicketCode is the short code of the entry's ticket for the door
	// (package ticket), on a form with check-in and for an entry that
	// holds its place; "" shows no ticket. The QR code is on the page of
	// ManageURL, not in the mail: mail programs often block images.
	TicketCode string
}

// ErasureView is what the mail telling a person their data was erased
// shows: the form and the day, nothing else of theirs.
type ErasureView struct {
	FormTitle string
	// ErasedAt is when the erasure was done; the mail gives its day.
	ErasedAt time.Time
}

//go:embed templates
var templateFS embed.FS

// templates are one language's text and HTML templates, parsed once.
type templates struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

var byLang = map[string]templates{
	english.tag: parse("en"),
	chinese.tag: parse("zh"),
}

func parse(name string) templates {
	return templates{
		text: texttemplate.Must(texttemplate.New(name).Option("missingkey=error").ParseFS(templateFS, "templates/"+name+".txt")),
		html: htmltemplate.Must(htmltemplate.New(name).Option("missingkey=error").Funcs(htmlFuncs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")),
	}
}

// htmlFuncs help the HTML templates pass several values to the shared
// parts of layout.html.
var htmlFuncs = htmltemplate.FuncMap{
	// dict makes a map of its key, value pairs.
	"dict": func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	// cols puts the headings of a digest's fixed columns before those of
	// its field columns.
	"cols": func(at, status string, fields []string) []string {
		return append([]string{at, status}, fields...)
	},
	// keyPart is prefix+key, or nothing without a key.
	"keyPart": func(prefix, key string) string {
		if key == "" {
			return ""
		}
		return prefix + key
	},
}

// Render makes the subject and the two bodies of a mail of kind k in the
// language lang ("zh", "zh-CN", … give Chinese, anything else English),
// with times shown in loc (nil: UTC). v is the kind's view: EntryView,
// DigestView, ConfirmationView or ErasureView (or a pointer to one). The HTML body
// escapes every value, so values a stranger typed are safe in it; the
// text body indents the further lines of a value, so that a value cannot
// pass for a line of the mail.
func Render(k Kind, lang string, v any, loc *time.Location) (subject, text, html string, err error) {
	if loc == nil {
		loc = time.UTC
	}
	l := pickLang(lang)
	var data any
	switch k {
	case Entry:
		ev, ok := deref[EntryView](v)
		if !ok {
			return "", "", "", fmt.Errorf("render %s: %w: got %T", k, ErrViewType, v)
		}
		data = entryModel(l, ev, loc)
	case Digest:
		dv, ok := deref[DigestView](v)
		if !ok {
			return "", "", "", fmt.Errorf("render %s: %w: got %T", k, ErrViewType, v)
		}
		data = digestModel(l, dv, loc)
	case Confirmation:
		cv, ok := deref[ConfirmationView](v)
		if !ok {
			return "", "", "", fmt.Errorf("render %s: %w: got %T", k, ErrViewType, v)
		}
		if _, ok := l.person[cv.Status]; !ok {
			return "", "", "", fmt.Errorf("render %s: %w: %q", k, ErrUnknownStatus, cv.Status)
		}
		data = confirmationModel(l, cv, loc)
	case Erasure:
		ev, ok := deref[ErasureView](v)
		if !ok {
			return "", "", "", fmt.Errorf("render %s: %w: got %T", k, ErrViewType, v)
		}
		data = erasureData{Title: ev.FormTitle, Day: l.day(ev.ErasedAt, loc)}
	default:
		return "", "", "", fmt.Errorf("render: %w: %q", ErrUnknownKind, k)
	}
	t := byLang[l.tag]
	var sb, tb, hb bytes.Buffer
	if err := t.text.ExecuteTemplate(&sb, string(k)+".subject", data); err != nil {
		return "", "", "", fmt.Errorf("render %s subject: %w", k, err)
	}
	subject = oneLine(sb.String())
	if err := t.text.ExecuteTemplate(&tb, string(k), data); err != nil {
		return "", "", "", fmt.Errorf("render %s text: %w", k, err)
	}
	page := struct {
		Lang, Subject string
		V             any
	}{l.tag, subject, data}
	if err := t.html.ExecuteTemplate(&hb, string(k), page); err != nil {
		return "", "", "", fmt.Errorf("render %s html: %w", k, err)
	}
	return subject, tidy(tb.String()), hb.String(), nil
}

// deref accepts a view by value or by non-nil pointer.
func deref[T any](v any) (T, bool) {
	switch x := v.(type) {
	case T:
		return x, true
	case *T:
		if x != nil {
			return *x, true
		}
	}
	var zero T
	return zero, false
}

// field is a FieldValue made ready for the templates: Value for HTML
// (whose cell keeps line breaks) and Text for the text body, where the
// lines after the first are indented.
type field struct {
	Label, Value, Text string
}

func fields(l lang, fvs []FieldValue) []field {
	out := make([]field, len(fvs))
	for i, fv := range fvs {
		v := l.value(fv.Value)
		out[i] = field{Label: fv.Label, Value: v, Text: indent(v)}
	}
	return out
}

// value shows one submitted value in the language l.
func (l lang) value(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = ""
	case string:
		s = x
	case bool:
		s = l.no
		if x {
			s = l.yes
		}
	case []string:
		s = strings.Join(x, l.sep)
	case []any:
		parts := make([]string, 0, len(x))
		for _, p := range x {
			if p := l.value(p); p != "" {
				parts = append(parts, p)
			}
		}
		s = strings.Join(parts, l.sep)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		s = x.String()
	case json.RawMessage:
		var d any
		dec := json.NewDecoder(bytes.NewReader(x))
		dec.UseNumber()
		if len(x) > 0 && dec.Decode(&d) == nil {
			return l.value(d)
		}
		s = string(x)
	case fmt.Stringer:
		s = x.String()
	default:
		s = fmt.Sprint(x)
	}
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// indent puts four spaces before each line of s after the first, and
// makes every line break a plain \n.
func indent(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	return strings.ReplaceAll(s, "\n", "\n    ")
}

// tidy trims each line's trailing spaces and collapses runs of blank
// lines that conditional sections leave, and ends with one line break.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := true
	for _, ln := range lines {
		ln = strings.TrimRight(ln, " \t")
		if ln == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, ln)
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n"
}

// shorten cuts s to n characters, with an ellipsis.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// The models the templates see: every word and time already in the
// mail's language.

type entryData struct {
	Title, FormID, Status, StatusWord, ID, Key, ReceivedAt, Receipt, ConsoleURL string
	Fields                                                                      []field
	Files                                                                       []fileRow
	FilesUntil                                                                  string
}

func entryModel(l lang, v EntryView, loc *time.Location) entryData {
	d := entryData{
		Title: v.FormTitle, FormID: v.FormID, Status: v.Status, StatusWord: l.ownerStatus(v.Status),
		ID: v.ID, Key: v.Key, ReceivedAt: l.when(v.ReceivedAt, loc), Receipt: v.Receipt,
		ConsoleURL: v.ConsoleURL, Fields: fields(l, v.Fields),
	}
	d.Files, d.FilesUntil = fileRows(v.Files, loc, l)
	return d
}

type digestRow struct {
	At, Status string
	Values     []string
}

type digestData struct {
	Title, FormID, Span, ConsoleURL string
	Count, More                     int
	Columns                         []string
	Rows                            []digestRow
}

func digestModel(l lang, v DigestView, loc *time.Location) digestData {
	total := max(v.Count, len(v.Entries))
	shown := v.Entries[:min(len(v.Entries), MaxDigestRows)]
	d := digestData{
		Title: v.FormTitle, FormID: v.FormID, Span: l.span(v.Start, v.End, loc), ConsoleURL: v.ConsoleURL,
		Count: total, More: total - len(shown),
	}
	if len(shown) > 0 {
		for _, f := range shown[0].Fields[:min(2, len(shown[0].Fields))] {
			d.Columns = append(d.Columns, f.Label)
		}
	}
	for _, e := range shown {
		row := digestRow{At: l.at(e.ReceivedAt, v.Start, loc), Status: l.ownerStatus(e.Status)}
		for i := range d.Columns {
			val := ""
			if i < len(e.Fields) {
				val = shorten(l.value(e.Fields[i].Value), digestValueRunes)
			}
			row.Values = append(row.Values, val)
		}
		d.Rows = append(d.Rows, row)
	}
	return d
}

type confirmationData struct {
	Title, Status, Sentence, ReceivedAt, Receipt string
	Fields                                       []field
	ManageURL, TicketCode                        string
}

func confirmationModel(l lang, v ConfirmationView, loc *time.Location) confirmationData {
	return confirmationData{
		Title: v.FormTitle, Status: v.Status, Sentence: l.person[v.Status],
		ReceivedAt: l.when(v.ReceivedAt, loc), Receipt: v.Receipt, Fields: fields(l, v.Fields), ManageURL: v.ManageURL,
		TicketCode: v.TicketCode,
	}
}

type erasureData struct {
	Title, Day string
}

// oneLine turns line breaks and other control characters into spaces, so
// that a title with a line break still makes one subject line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r < ' ' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029
	}), " ")
}
