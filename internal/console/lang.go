package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/langpref"
	"github.com/formd/formd/internal/store"
)

// lang is a language the console speaks: its tag and its strings.
type lang struct {
	Tag string
	T   map[string]string
}

// Other is the language the switch offers.
func (l lang) Other() lang {
	if l.Tag == "en" {
		return chinese
	}
	return english
}

var (
	english = lang{Tag: "en", T: enStrings}
	chinese = lang{Tag: "zh-CN", T: zhStrings}
)

// langCookie keeps the language a person chose with the switch.
const langCookie = "formd_lang"

// pickLang chooses English or Simplified Chinese: ?lang= (remembered in a
// cookie), the cookie, then Accept-Language, then English.
func pickLang(w http.ResponseWriter, r *http.Request) lang {
	pick := func(s string) (lang, bool) {
		switch langpref.Of(strings.TrimSpace(s)) {
		case langpref.Chinese:
			return chinese, true
		case langpref.English:
			return english, true
		}
		return lang{}, false
	}
	if l, ok := pick(r.URL.Query().Get("lang")); ok {
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: l.Tag, Path: "/admin/", MaxAge: 365 * 24 * 3600, SameSite: http.SameSiteLaxMode, HttpOnly: true})
		return l
	}
	if c, err := r.Cookie(langCookie); err == nil {
		if l, ok := pick(c.Value); ok {
			return l
		}
	}
	if langpref.Accept(r.Header.Get("Accept-Language")) == langpref.Chinese {
		return chinese
	}
	return english
}

func itoa(n int) string { return strconv.Itoa(n) }

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"t": func(l lang, key string, args ...any) string {
		s, ok := l.T[key]
		if !ok {
			s = enStrings[key]
			if s == "" {
				s = key
			}
		}
		if len(args) > 0 {
			return fmt.Sprintf(s, args...)
		}
		return s
	},
	"text": func(t form.Text, l lang) string { return t.For(l.Tag) },
	// auditDetail words an audit entry's detail (auditdetail.go).
	"auditDetail": auditDetail,
	"auditActor":  auditActor,
	// action words an audit log action; one the tables do not know (a
	// newer action) is shown as its code, which is still true.
	"action": func(l lang, code string) string {
		if s, ok := l.T["action."+code]; ok {
			return s
		}
		return code
	},
	// sameStatus says an event only restates its entry's status
	// (submission.stored → stored), so the history shows it once.
	"sameStatus": func(eventType, status string) bool { return strings.TrimPrefix(eventType, "submission.") == status },
	// minPassword is the password rule of package accounts, so the pages
	// in both languages and the browser's check say what the server does.
	"minPassword": func() int { return accounts.MinPasswordLength },
	// when, whenp, hour and hhmm are a moment as a <time> element: UTC
	// in its text and its title, RFC 3339 in datetime; console.js writes
	// the text again in the browser's time zone, with the zone, and keeps
	// UTC on hover. utc is the UTC text alone, for attributes.
	"when": func(t time.Time) template.HTML { return timeEl(t, "s") },
	"whenp": func(t *time.Time) template.HTML {
		if t == nil {
			return ""
		}
		return timeEl(*t, "m")
	},
	"utc": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
	},
	"regions": regions,
	"local": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02T15:04")
	},
	"hhmm":     func(t time.Time) template.HTML { return timeEl(t, "t") },
	"utcClock": func(t time.Time) string { return t.UTC().Format("15:04") },
	"rfc3339":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// tz names the zone of the times beside it: UTC, or the browser's
	// once console.js has run.
	"tz": func() template.HTML { return `<span class="tz">UTC</span>` },
	// th is t for a text whose arguments are markup (times): the text and
	// every other argument are escaped, the markup is kept.
	"th": func(l lang, key string, args ...any) template.HTML {
		s, ok := l.T[key]
		if !ok {
			s = enStrings[key]
		}
		s = template.HTMLEscapeString(s)
		for i, a := range args {
			if h, ok := a.(template.HTML); ok {
				args[i] = string(h)
			} else if str, ok := a.(string); ok {
				args[i] = template.HTMLEscapeString(str)
			}
		}
		return template.HTML(fmt.Sprintf(s, args...)) // #nosec: every part escaped above
	},
	"ms": func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	},
	"hour": func(t time.Time) template.HTML { return timeEl(t, "h") },
	"num":  func(n any) string { return group(fmt.Sprint(n)) },
	"pct": func(a, b int64) string {
		if b == 0 {
			return "—"
		}
		return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 1, 64) + " %"
	},
	"ago": func(t time.Time, now time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return now.Sub(t).Round(time.Second).String()
	},
	"hex":       func(b [32]byte) string { return fmt.Sprintf("%x", b[:]) },
	"cursor":    func(c store.Cursor) string { return strconv.FormatUint(c.Seq, 10) + ":" + c.ID },
	"hasPrefix": strings.HasPrefix,
	"join":      strings.Join,
	"pretty": func(raw json.RawMessage) string {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return string(raw)
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
	"add":  func(a, b int) int { return a + b },
	"list": func(s ...string) []string { return s },
	// fieldLabel names a builder's field in the page's language.
	"fieldLabel": func(f draftField, l lang) string {
		if l.Tag == chinese.Tag && f.LabelZH != "" {
			return f.LabelZH
		}
		return orDefault(orDefault(f.LabelEN, f.LabelZH), f.Name)
	},
	"minus": func(a, b int64) int64 { return a - b },
	"deref": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
	"chartMax": func(c admin.Chart) int64 { return max(c.Peak.N, 1) },
	// barHeight is a bar's height in the chart's 100 units, at least 2 so
	// a minute with one entry shows.
	"barHeight": func(n, peak int64) int { return max(int(n*96/peak), 2) },
	"sub":       func(a, b int) int { return a - b },
	"mul":       func(a, b int) int { return a * b },
	"div": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a / b
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

// timeLayouts are the UTC texts of timeEl's formats: a second, a minute,
// an hour, a clock time (its zone said once beside it).
var timeLayouts = map[string]string{"s": "2006-01-02 15:04:05", "m": "2006-01-02 15:04", "h": "2006-01-02 15:00", "t": "15:04"}

// timeEl is a moment as <time datetime=RFC3339 data-fmt=F title="… UTC">.
func timeEl(t time.Time, f string) template.HTML {
	if t.IsZero() {
		return "—"
	}
	t = t.UTC()
	text := t.Format(timeLayouts[f])
	full := t.Format("2006-01-02 15:04:05") + " UTC"
	if f != "t" {
		text += " UTC"
	}
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `" data-fmt="` + f + `" title="` + full + `">` + text + `</time>`)
}

// group writes digit groups with thin spaces: 1 000 000.
func group(s string) string {
	if len(s) <= 4 || strings.ContainsAny(s, ".-") {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteString("\u202f")
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
