package hosted

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/url"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/form"
)

// pageView is what the page template shows.
type pageView struct {
	L           lang
	ID          string
	Title       string
	Description string
	Action      string
	// Redirect is the form's thank-you page: the SDK goes there on
	// success, as a post without JavaScript is redirected there.
	Redirect string
	SDK      string
	// Notice says why the form cannot be filled in (closed, full); Places
	// says how many places remain.
	Notice   string
	Places   string
	ShowForm bool
	// Multipart says the form has a file field: without JavaScript the
	// page posts multipart/form-data, which the server streams to the
	// upload store; with it the SDK keeps the files in its outbox and
	// sends them over tus, resumably, then the submission.
	Multipart bool
	Key       string
	Shown     string
	Honeypot  string
	Fields    []fieldView
	// Msgs are the status element's data-msg-* and data-err-* attributes:
	// the SDK's texts in the page's language.
	Msgs template.HTMLAttr
	// Summary is set when the page shows a failed post again.
	Summary string
	// Challenge is set for a form with spam.challenge (altcha.go).
	Challenge *challengeView
	// Conditions are the fields' show_if as JSON, and ConditionsJS the
	// script that applies them as the page is filled in, for a form with
	// conditions; without JavaScript every field shows and the server
	// ignores those not shown.
	Conditions   string
	ConditionsJS string
	// Steps are the form's pages, each a title and indexes into Fields
	// (one untitled step for a form without pages); Hidden the hidden
	// fields, outside every step. StepsJS is the script that shows one
	// step at a time, for a form with pages.
	Steps   []stepView
	Hidden  []hiddenView
	StepsJS string
	// Preview is the console builder's banner: the page is a preview
	// (Preview), and nothing sent from it is kept.
	Preview string
	// DraftsJS is the script that saves and resumes drafts, for a form
	// with drafts: true; DraftMsgs its texts (data-draft-* attributes).
	DraftsJS  string
	DraftMsgs template.HTMLAttr
	// DraftMail, when set, offers to e-mail the resume link: the
	// data-mail-* texts of its button.
	DraftMail template.HTMLAttr
}

// draftMailStates are the states of "E-mail me this link" that have a
// text.
var draftMailStates = []string{"sending", "sent", "none", "limited", "failed"}

// draftMailMessages writes the data-mail-* attributes of the button that
// e-mails the resume link.
func draftMailMessages(l lang) template.HTMLAttr {
	var b strings.Builder
	for _, s := range draftMailStates {
		b.WriteString(" data-mail-" + s + `="` + html.EscapeString(l.T["mail-"+s]) + `"`)
	}
	return template.HTMLAttr(b.String()) //nolint:gosec // constant names, escaped values
}

// draftStates are drafts.js's states that have a text.
var draftStates = []string{"saving", "saved", "retrying", "conflict", "submitted", "gone", "failed", "opening", "resumed"}

// draftMessages writes the data-draft-* attributes of the drafts' status
// line, as messages does the SDK's.
func draftMessages(l lang) template.HTMLAttr {
	var b strings.Builder
	for _, s := range draftStates {
		b.WriteString(" data-draft-" + s + `="` + html.EscapeString(l.T["draft-"+s]) + `"`)
	}
	return template.HTMLAttr(b.String()) //nolint:gosec // constant names, escaped values
}

// stepView is one page of the form.
type stepView struct {
	Title  string
	Fields []int
}

// hiddenView is a hidden field and its value from the query string.
type hiddenView struct{ Name, Value string }

// layout fills the page's steps and hidden fields, and the values the
// query string gives: a prefill: true field takes its first value from
// it (/f/exam?class=3B), a hidden field its value; a value for any other
// field is not taken. Both are validated by the server like any other.
func (v *pageView) layout(f *form.Form, l lang, query url.Values) {
	fields := f.Fields()
	onStep := map[int]bool{}
	for i, step := range f.Steps() {
		title := f.Def.Pages[i].Title.For(l.Tag)
		if title == "" {
			title = fmt.Sprintf(l.T["step"], i+1)
		}
		v.Steps = append(v.Steps, stepView{Title: title, Fields: step})
		for _, j := range step {
			onStep[j] = true
		}
	}
	var rest []int
	for i, fd := range fields {
		switch {
		case fd.Type == form.TypeHidden:
			v.Hidden = append(v.Hidden, hiddenView{Name: fd.Name, Value: query.Get(fd.Name)})
		case fd.Prefill && query.Has(fd.Name):
			v.Fields[i].fill(any(query.Get(fd.Name)))
			if fd.Type == form.TypeMultiselect {
				v.Fields[i].fill(anyList(query[fd.Name]))
			}
		}
		if fd.Type != form.TypeHidden && !onStep[i] {
			rest = append(rest, i)
		}
	}
	if len(v.Steps) == 0 {
		v.Steps = []stepView{{Fields: rest}}
	}
}

func anyList(ss []string) any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// conditionsOf is the JSON of f's fields with their show_if, for the
// page's conditions.js; "" when no field has one.
func conditionsOf(f *form.Form) string {
	type field struct {
		Name   string          `json:"name"`
		ShowIf *form.Condition `json:"show_if,omitempty"`
	}
	var out []field
	has := false
	for _, fd := range f.Fields() {
		out = append(out, field{fd.Name, fd.ShowIf})
		has = has || fd.ShowIf != nil
	}
	if !has {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// fieldView is one field as the template draws it, its HTML constraints
// mirroring the server's checks so most mistakes are caught before
// sending; the server's answer is still what counts.
type fieldView struct {
	Name, Type, ID, Label, Help, Placeholder string
	Input                                    string // the type attribute of an <input>
	Required                                 bool
	Autocomplete, InputMode                  string
	MinLength, MaxLength                     int
	Min, Max, Step                           string
	Options                                  []option
	Choose                                   string
	HelpID, ErrID, Describedby               string
	// Value, Chosen and Error are set when a failed post is shown again:
	// what the person typed or chose, and what is wrong with it.
	Value  string
	Chosen map[string]bool
	Error  string
	// Autofocus marks the first field to fix.
	Autofocus bool
	// Accept and Multiple are a file input's: the types it takes and
	// whether it takes more than one file.
	Accept   string
	Multiple bool
}

// fill keeps what a person sent for this field, as the decoder gave it
// (a string, or a list for several values).
func (v *fieldView) fill(raw any) {
	var vals []string
	switch x := raw.(type) {
	case string:
		vals = []string{x}
	case []any:
		for _, it := range x {
			if s, ok := it.(string); ok {
				vals = append(vals, s)
			}
		}
	}
	if len(vals) == 0 {
		return
	}
	v.Value = vals[0]
	v.Chosen = map[string]bool{}
	for _, s := range vals {
		v.Chosen[s] = true
	}
}

// errorText is a field error in the page's language: the translation of
// its code, with the bound it names, when there is one; else the label
// with the server's message (English, which names the bound itself).
func errorText(l lang, label string, e form.FieldError) string {
	if t, ok := l.Err[e.Code]; ok {
		return label + ": " + fillLimit(t, e.Limit)
	}
	return label + " " + e.Message + "."
}

// option is one choice of a select or multiselect. Disabled marks a full
// option of a form that turns people away (its label says so).
type option struct {
	Value, Label string
	Disabled     bool
}

func fieldViews(f *form.Form, l lang) []fieldView {
	fields := f.Fields()
	out := make([]fieldView, 0, len(fields))
	for _, fd := range fields {
		v := fieldView{
			Name: fd.Name, Type: fd.Type, ID: "f-" + fd.Name,
			Label:       orDefault(fd.Label.For(l.Tag), fd.Name),
			Help:        fd.Help.For(l.Tag),
			Placeholder: fd.Placeholder.For(l.Tag),
			Required:    fd.Required,
			Choose:      l.T["choose"],
			HelpID:      "h-" + fd.Name,
			ErrID:       "e-" + fd.Name,
			Input:       "text",
		}
		v.Describedby = v.ErrID
		if v.Help != "" {
			v.Describedby = v.HelpID + " " + v.ErrID
		}
		switch fd.Type {
		case form.TypeText, form.TypeTextarea, form.TypeEmail:
			if fd.Min != nil {
				v.MinLength = int(fd.Min.Num)
			}
			if fd.Max != nil {
				v.MaxLength = int(fd.Max.Num)
			}
			if fd.MaxLength != nil {
				v.MaxLength = *fd.MaxLength
			}
			if fd.Type == form.TypeEmail {
				v.Input, v.Autocomplete = "email", "email"
			}
		case form.TypePhone:
			v.Input, v.Autocomplete = "tel", "tel"
		case form.TypeNumber:
			v.Input, v.Step = "number", "any"
			if fd.Integer {
				v.Step, v.InputMode = "1", "numeric"
			}
			if fd.Min != nil {
				v.Min = strconv.FormatFloat(fd.Min.Num, 'f', -1, 64)
			}
			if fd.Max != nil {
				v.Max = strconv.FormatFloat(fd.Max.Num, 'f', -1, 64)
			}
		case form.TypeFile:
			v.Input = "file"
			v.Accept = strings.Join(fd.AcceptTypes(), ",")
			v.Multiple = fd.MaxFilesOf() > 1
		case form.TypeDate:
			v.Input = "date"
			if fd.Min != nil {
				v.Min = fd.Min.Date
			}
			if fd.Max != nil {
				v.Max = fd.Max.Date
			}
		}
		if fd.Type == form.TypeText && v.Autocomplete == "" {
			v.Autocomplete = autocompleteFor(fd.Name)
		}
		for _, o := range fd.Options {
			v.Options = append(v.Options, option{Value: o.Value, Label: orDefault(o.Label.For(l.Tag), o.Value)})
		}
		out = append(out, v)
	}
	return out
}

// autocompleteFor guesses the autofill token of a text field from its
// name, for the common ones; a wrong guess would fill in wrong data, so
// anything else gets none.
func autocompleteFor(name string) string {
	switch name {
	case "name", "full_name", "fullname":
		return "name"
	case "organization", "company":
		return "organization"
	}
	return ""
}

// stateKeys are the SDK's states that have a message; "full" is stored as
// full-state because "full" is also the page's notice.
var stateKeys = []struct{ state, key string }{
	{"sending", "sending"}, {"saved", "saved"}, {"unsaved", "unsaved"}, {"received", "received"}, {"waitlisted", "waitlisted"},
	{"duplicate", "duplicate"}, {"invalid", "invalid"}, {"closed", "closed"}, {"full", "full-state"}, {"failed", "failed"},
	{"uploading", "uploading"}, {"manage", "manage"},
}

// messages writes the attributes from constant names and escaped values
// (html/template refuses attribute names that come from data).
func messages(l lang) template.HTMLAttr {
	var b strings.Builder
	add := func(name, value string) {
		b.WriteString(" " + name + `="` + html.EscapeString(value) + `"`)
	}
	for _, s := range stateKeys {
		add("data-msg-"+s.state, l.T[s.key])
	}
	for _, code := range errorCodes {
		if m, ok := l.Err[code]; ok {
			add("data-err-"+code, m)
		}
	}
	for _, code := range uploadCodes {
		add("data-code-"+code, l.T["code."+code])
	}
	return template.HTMLAttr(b.String()) //nolint:gosec // constant names, escaped values
}

// errorCodes lists the validation codes in a fixed order, so the page is
// the same from one render to the next.
var errorCodes = []string{
	"required", "invalid-value", "invalid-email", "invalid-phone", "invalid-option", "invalid-date",
	"not-a-number", "not-an-integer", "too-small", "too-large", "too-short", "too-long",
	"too-early", "too-late", "too-few", "too-many", "pattern", "unknown-field",
	"file-rejected", "file-too-large",
}
