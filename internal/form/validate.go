package form

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FieldError is one problem with one submitted value. Code is stable and
// machine-readable; Message is for people and never repeats the value.
type FieldError struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Limit is the bound a too-* code refers to (a number, a length, a
	// count or a YYYY-MM-DD date), so that clients can say it in their own
	// language.
	Limit string `json:"limit,omitempty"`
}

// ValidationError lists every field that needs a fix.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Field + ": " + fe.Code
	}
	return "validation failed: " + strings.Join(parts, ", ")
}

// Accepted is a submission that passed validation: its values normalized,
// the fingerprint that identifies its content, and the claims that make a
// participant unique.
type Accepted struct {
	// Data is a JSON object of the normalized values, in the form's field
	// order; fields left empty are absent. Fields the form does not define
	// are kept under ExtraKey; the names of fields not shown that a value
	// was sent for, under IgnoredKey.
	Data json.RawMessage
	// Fingerprint is the keyed hash (see Hasher) of the form id and the
	// values in their comparison form: two submissions a person cannot
	// tell apart have the same one.
	Fingerprint [32]byte
	// Claims holds one opaque token per unique set whose fields are all
	// filled; two submissions with equal compared values share it.
	Claims []string
	// Uploads are the uploads the file fields name, in field order; their
	// ids are also in Data under UploadsKey, for the decision that claims
	// them.
	Uploads []UploadRef
	// Ignored names the fields a value was sent for that were not stored:
	// fields not shown (show_if), in field order.
	Ignored []string
}

// ExtraKey is the member of an entry's data that holds the submitted
// fields the form does not define (field names cannot start with '_').
const ExtraKey = "_extra"

// Limits on the fields a form does not define, so that they cannot
// dwarf the ones it does.
const (
	maxExtraFields  = 50
	maxExtraNameLen = 100
)

// Validate checks a decoded body against the form and normalizes it. in maps
// a field name to a string, a json.Number, a bool, a []any of those, or nil,
// as the intake decodes JSON (with UseNumber) and form posts (objects too,
// for fields the form does not define). The reserved _key and _ts and the
// honeypot are not data; any other name the form does not define is kept
// under ExtraKey, or refused when the form says unknown_fields: reject.
// h keys the fingerprint and the claims. The error, if any, is a
// *ValidationError.
func (f *Form) Validate(in map[string]any, h *Hasher) (*Accepted, error) {
	vals := make([]value, len(f.fields))
	var errs []FieldError
	var uploads []UploadRef
	var ignored []string
	var shown []bool
	if f.conditional {
		shown = make([]bool, len(f.fields))
	}
	for i := range f.fields {
		cf := &f.fields[i]
		if shown != nil {
			shown[i] = cf.ShowIf == nil || cf.ShowIf.Holds(func(name string) []string {
				if j, ok := f.byName[name]; ok && j < i && shown[j] {
					return vals[j].answer()
				}
				return nil
			})
			if !shown[i] {
				// Not shown: not required, and what was sent is not kept.
				if AnswerOf(in[cf.Name]) != nil {
					ignored = append(ignored, cf.Name)
				}
				continue
			}
		}
		if cf.Type == TypeFile {
			v, ids, fe := cf.normalizeFile(in[cf.Name])
			if fe != nil {
				fe.Field = cf.Name
				errs = append(errs, *fe)
				continue
			}
			vals[i] = v
			for _, id := range ids {
				uploads = append(uploads, UploadRef{Field: cf.Name, ID: id})
			}
			continue
		}
		v, fe := cf.normalize(in[cf.Name])
		if fe != nil {
			fe.Field = cf.Name
			errs = append(errs, *fe)
			continue
		}
		vals[i] = v
	}
	extra, extraErrs := f.extras(in)
	errs = append(errs, extraErrs...)
	if len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	return &Accepted{
		Data:        f.encode(vals, extra, uploads, ignored),
		Fingerprint: f.fingerprint(h, vals, extra),
		Claims:      f.claims(h, vals),
		Uploads:     uploads,
		Ignored:     ignored,
	}, nil
}

// extraField is a submitted field the form does not define, its value as
// JSON.
type extraField struct {
	name  string
	value []byte
}

// extras collects the fields the form does not define, sorted by name, or
// refuses them when the form says so.
func (f *Form) extras(in map[string]any) ([]extraField, []FieldError) {
	if len(in) <= len(f.fields) {
		all := true
		for name := range in {
			if _, ok := f.byName[name]; !ok {
				all = false
				break
			}
		}
		if all {
			return nil, nil
		}
	}
	honeypot := ""
	if f.Def.Spam != nil {
		honeypot = f.Def.Spam.Honeypot
	}
	var names []string
	for name := range in {
		if _, ok := f.byName[name]; ok || name == KeyField || name == TimeField || name == honeypot {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, nil
	}
	slices.Sort(names)
	var errs []FieldError
	if f.Def.UnknownFields == UnknownReject {
		for _, n := range names {
			fe := fieldErr("unknown-field", "is not a field of this form")
			fe.Field = n
			if !utf8.ValidString(n) || len(n) > maxExtraNameLen {
				fe.Field = "?"
			}
			errs = append(errs, *fe)
			if len(errs) == 20 {
				break
			}
		}
		return nil, errs
	}
	if len(names) > maxExtraFields {
		return nil, []FieldError{{Field: names[maxExtraFields], Code: "too-many", Message: fmt.Sprintf("the form keeps at most %d fields it does not define", maxExtraFields), Limit: strconv.Itoa(maxExtraFields)}}
	}
	out := make([]extraField, 0, len(names))
	for _, n := range names {
		if !utf8.ValidString(n) || len(n) > maxExtraNameLen || n == "" {
			errs = append(errs, FieldError{Field: "?", Code: "invalid-value", Message: fmt.Sprintf("a field name is empty, longer than %d bytes or not valid UTF-8", maxExtraNameLen)})
			continue
		}
		v, ok := extraJSON(in[n])
		if !ok {
			errs = append(errs, FieldError{Field: n, Code: "invalid-value", Message: "is not valid UTF-8 text"})
			continue
		}
		out = append(out, extraField{name: cleanInvisible(n, true), value: v})
	}
	return out, errs
}

// extraJSON encodes a value of a field the form does not define, as
// decoded (strings stay strings, numbers keep their digits), its text
// cleaned of invisible characters as a text field's is (bidi controls
// that would show "evil\u202egpj.exe" as "evilexe.jpg").
func extraJSON(v any) ([]byte, bool) {
	if !validUTF8Value(v) {
		return nil, false
	}
	b, err := json.Marshal(cleanValue(v))
	return b, err == nil
}

// cleanValue is v with cleanInvisible applied to every string in it.
func cleanValue(v any) any {
	switch x := v.(type) {
	case string:
		return cleanInvisible(x, true)
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = cleanValue(it)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, it := range x {
			out[cleanInvisible(k, true)] = cleanValue(it)
		}
		return out
	}
	return v
}

func validUTF8Value(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case []any:
		for _, it := range x {
			if !validUTF8Value(it) {
				return false
			}
		}
	case map[string]any:
		for k, it := range x {
			if !utf8.ValidString(k) || !validUTF8Value(it) {
				return false
			}
		}
	}
	return true
}

// value is one normalized value: s holds the value as stored (for a
// multiselect, the chosen values joined by \x1f), cmp its comparison form
// (for fingerprints and claims), kind says how to write it as JSON, set
// says whether there is a value at all.
type value struct {
	s    string
	cmp  string
	kind byte // 's' string, 'n' number, 'b' bool, 'l' list
	set  bool
}

// same makes a value whose stored and compared forms are one.
func same(s string, kind byte) value { return value{s: s, cmp: s, kind: kind, set: true} }

const listSep = "\x1f"

func fieldErr(code, msg string, args ...any) *FieldError {
	return &FieldError{Code: code, Message: fmt.Sprintf(msg, args...)}
}

// boundErr is a field error about a bound: the message says it, and Limit
// carries it for clients that translate the code.
func boundErr(code, msg string, limit any) *FieldError {
	fe := fieldErr(code, msg, limit)
	fe.Limit = fmt.Sprint(limit)
	return fe
}

func (cf *compiledField) normalize(raw any) (value, *FieldError) {
	switch cf.Type {
	case TypeCheckbox:
		b, ok := toBool(raw)
		if !ok {
			return value{}, fieldErr("invalid-value", "must be true or false")
		}
		if cf.Required && !b {
			return value{}, fieldErr("required", "must be checked")
		}
		return same(strconv.FormatBool(b), 'b'), nil
	case TypeMultiselect:
		return cf.normalizeList(raw)
	}
	s, ok := scalarString(raw)
	if !ok {
		return value{}, fieldErr("invalid-value", "must be a single text value")
	}
	if !utf8.ValidString(s) {
		return value{}, fieldErr("invalid-value", "is not valid UTF-8 text")
	}
	text := cf.Type == TypeText || cf.Type == TypeTextarea || cf.Type == TypeHidden
	s = strings.TrimSpace(cleanInvisible(s, text))
	if s == "" || (!isASCII(s) && fold(s) == "") {
		// Only invisible characters and spaces: nothing was written.
		if cf.Required {
			return value{}, fieldErr("required", "is required")
		}
		return value{}, nil
	}
	switch cf.Type {
	case TypeText, TypeTextarea, TypeHidden:
		t, fe := cleanText(s, cf.Type == TypeTextarea)
		if fe != nil {
			return value{}, fe
		}
		if fe := cf.checkLength(t); fe != nil {
			return value{}, fe
		}
		if cf.pattern != nil && !cf.pattern.MatchString(t) {
			return value{}, fieldErr("pattern", "does not have the expected format")
		}
		cmp := fold(t)
		if len(cf.Normalize) > 0 {
			cmp = applyNormalize(cmp, cf.Normalize)
		}
		return value{s: t, cmp: cmp, kind: 's', set: true}, nil
	case TypeEmail:
		e := canonicalEmail(s)
		if fe := cf.checkLength(e); fe != nil {
			return value{}, fe
		}
		if !validEmail(e) {
			return value{}, fieldErr("invalid-email", "is not an e-mail address")
		}
		// An address mail cannot reach is refused: formd may send a
		// confirmation to it, and an address literal or a reserved name
		// would point formd's mail at a host of the sender's choosing.
		if err := Deliverable(e); err != nil {
			return value{}, fieldErr("invalid-email", "%s", err.Error())
		}
		if cf.pattern != nil && !cf.pattern.MatchString(e) {
			return value{}, fieldErr("pattern", "does not have the expected format")
		}
		return same(e, 's'), nil
	case TypePhone:
		p, fe := normalizePhone(fold(s), cf.Region)
		if fe != nil {
			return value{}, fe
		}
		return same(p, 's'), nil
	case TypeNumber:
		d, ok := parseDecimal(fold(s))
		if !ok {
			return value{}, fieldErr("not-a-number", "must be a number written with digits, an optional point and exponent, at most %d digits before the point and %d after", maxIntDigits, maxFracDigits)
		}
		if cf.Integer && !d.isInteger() {
			return value{}, fieldErr("not-an-integer", "must be a whole number")
		}
		if cf.hasMin && d.cmp(cf.minNum) < 0 {
			return value{}, boundErr("too-small", "must be at least %s", cf.minNum.canon)
		}
		if cf.hasMax && d.cmp(cf.maxNum) > 0 {
			return value{}, boundErr("too-large", "must be at most %s", cf.maxNum.canon)
		}
		return same(d.canon, 'n'), nil
	case TypeSelect:
		i, ok := cf.options[fold(s)]
		if !ok {
			return value{}, fieldErr("invalid-option", "is not one of the choices")
		}
		return same(cf.Options[i].Value, 's'), nil
	case TypeDate:
		s = fold(s)
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return value{}, fieldErr("invalid-date", "must be a date written YYYY-MM-DD")
		}
		if cf.minDate != "" && s < cf.minDate {
			return value{}, boundErr("too-early", "must be on or after %s", cf.minDate)
		}
		if cf.maxDate != "" && s > cf.maxDate {
			return value{}, boundErr("too-late", "must be on or before %s", cf.maxDate)
		}
		return same(s, 's'), nil
	}
	return value{}, fieldErr("invalid-value", "has an unknown type")
}

func (cf *compiledField) normalizeList(raw any) (value, *FieldError) {
	var items []string
	switch v := raw.(type) {
	case nil:
	case []any:
		for _, it := range v {
			s, ok := scalarString(it)
			if !ok {
				return value{}, fieldErr("invalid-value", "must be a list of choices")
			}
			items = append(items, s)
		}
	case []string:
		items = v
	default:
		s, ok := scalarString(v)
		if !ok {
			return value{}, fieldErr("invalid-value", "must be a list of choices")
		}
		items = []string{s}
	}
	pos := make([]int, 0, len(items))
	for _, it := range items {
		if !utf8.ValidString(it) {
			return value{}, fieldErr("invalid-value", "is not valid UTF-8 text")
		}
		it = fold(it)
		if it == "" {
			continue
		}
		p, ok := cf.options[it]
		if !ok {
			return value{}, fieldErr("invalid-option", "contains a value that is not one of the choices")
		}
		if !slices.Contains(pos, p) {
			pos = append(pos, p)
		}
	}
	if len(pos) == 0 {
		if cf.Required {
			return value{}, fieldErr("required", "choose at least one")
		}
		return value{}, nil
	}
	if cf.hasMin && len(pos) < cf.minLen {
		return value{}, boundErr("too-few", "choose at least %d", cf.minLen)
	}
	if len(pos) > cf.maxLen {
		return value{}, boundErr("too-many", "choose at most %d", cf.maxLen)
	}
	slices.Sort(pos)
	chosen := make([]string, len(pos))
	for i, p := range pos {
		chosen[i] = cf.Options[p].Value
	}
	return same(strings.Join(chosen, listSep), 'l'), nil
}

func (cf *compiledField) checkLength(s string) *FieldError {
	n := utf8.RuneCountInString(s)
	if n > cf.maxLen {
		return boundErr("too-long", "must be at most %d characters", cf.maxLen)
	}
	if cf.hasMin && n < cf.minLen {
		return boundErr("too-short", "must be at least %d characters", cf.minLen)
	}
	return nil
}

// cleanText puts text in NFC, turns line breaks and tabs of a one-line field
// into spaces (a textarea keeps them, with CRLF made LF), and refuses other
// control characters.
func cleanText(s string, multiline bool) (string, *FieldError) {
	s = norm.NFC.String(s)
	if multiline {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			if multiline && r != '\r' {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case unicode.IsControl(r):
			return "", fieldErr("invalid-value", "contains control characters")
		default:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String()), nil
}

// NormalizeEmail is an e-mail address as formd stores and compares it:
// NFKC, invisible characters removed, lower-cased.
func NormalizeEmail(s string) (string, error) {
	e := canonicalEmail(s)
	if !validEmail(e) {
		return "", errors.New("is not an e-mail address")
	}
	return e, nil
}

// canonicalEmail is an address as intake stores and compares it: the
// invisible characters removed, then NFKC (full-width letters and ＠ become
// ASCII), lower-cased and trimmed. Intake, search and erasure all use it,
// so that a spelling intake takes for one participant finds that entry.
func canonicalEmail(s string) string {
	s = strings.TrimSpace(cleanInvisible(s, false))
	if !isASCII(s) {
		s = cleanInvisible(norm.NFKC.String(s), false)
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// JSONString is s as a JSON string, encoded as entries' data encodes it.
func JSONString(s string) []byte { return appendJSONString(nil, s) }

func validEmail(e string) bool {
	at := strings.LastIndexByte(e, '@')
	if at < 1 || !strings.Contains(e[at+1:], ".") || strings.HasSuffix(e, ".") {
		return false
	}
	a, err := mail.ParseAddress(e)
	return err == nil && a.Name == "" && a.Address == e
}

func scalarString(raw any) (string, bool) {
	switch v := raw.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case []string:
		if len(v) == 1 {
			return v[0], true
		}
		if len(v) == 0 {
			return "", true
		}
	case []any:
		if len(v) == 1 {
			return scalarString(v[0])
		}
		if len(v) == 0 {
			return "", true
		}
	}
	return "", false
}

func toBool(raw any) (bool, bool) {
	switch v := raw.(type) {
	case nil:
		return false, true
	case bool:
		return v, true
	case []any:
		if len(v) == 1 {
			return toBool(v[0])
		}
		return false, len(v) == 0
	case []string:
		if len(v) == 1 {
			return toBool(v[0])
		}
		return false, len(v) == 0
	}
	s, ok := scalarString(raw)
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "false", "0", "off", "no":
		return false, true
	case "true", "1", "on", "yes":
		return true, true
	}
	return false, false
}

// encode writes the values as a JSON object in field order, then the
// fields the form does not define under ExtraKey, then the ids of the
// uploads named under UploadsKey.
func (f *Form) encode(vals []value, extra []extraField, uploads []UploadRef, ignored []string) json.RawMessage {
	b := make([]byte, 0, 64*len(vals))
	b = append(b, '{')
	first := true
	for i, v := range vals {
		if !v.set {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, f.fields[i].Name)
		b = append(b, ':')
		switch v.kind {
		case 'n', 'b':
			b = append(b, v.s...)
		case 'l':
			b = append(b, '[')
			for j, it := range strings.Split(v.s, listSep) {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, it)
			}
			b = append(b, ']')
		default:
			b = appendJSONString(b, v.s)
		}
	}
	if len(extra) > 0 {
		if !first {
			b = append(b, ',')
		}
		b = appendJSONString(b, ExtraKey)
		b = append(b, ":{"...)
		for i, x := range extra {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, x.name)
			b = append(b, ':')
			b = append(b, x.value...)
		}
		b = append(b, '}')
		first = false
	}
	if len(uploads) > 0 {
		if !first {
			b = append(b, ',')
		}
		b = appendJSONString(b, UploadsKey)
		b = append(b, ":["...)
		for i, u := range uploads {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, u.ID)
		}
		b = append(b, ']')
		first = false
	}
	if len(ignored) > 0 {
		if !first {
			b = append(b, ',')
		}
		b = appendJSONString(b, IgnoredKey)
		b = append(b, ":["...)
		for i, n := range ignored {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// IgnoredKey is the member of an entry's data that names the fields a
// value was sent for and not stored (a field not shown, by its show_if),
// so that nothing the person sent vanishes without a trace: the answer
// lists them under ignored, and the organizer sees the names (never the
// values) with the entry. Field names cannot start with '_'.
const IgnoredKey = "_ignored"

// IgnoredOf reads the names under IgnoredKey in an entry's data; nil when
// there are none.
func IgnoredOf(data json.RawMessage) []string {
	if !bytes.Contains(data, []byte(`"`+IgnoredKey+`":`)) {
		return nil
	}
	var d struct {
		Ignored []string `json:"_ignored"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil
	}
	return d.Ignored
}

// fingerprint hashes the form id and the present values' comparison forms
// in field-name order, then the fields the form does not define, each
// length-prefixed so that no two different submissions share an input.
func (f *Form) fingerprint(h *Hasher, vals []value, extra []extraField) [32]byte {
	buf := make([]byte, 0, 256)
	buf = append(buf, "formd/fp/v2\n"...)
	buf = appendLenPrefixed(buf, f.Def.ID)
	for _, i := range f.order {
		if !vals[i].set {
			continue
		}
		buf = appendLenPrefixed(buf, f.fields[i].Name)
		buf = appendLenPrefixed(buf, vals[i].cmp)
	}
	for _, x := range extra {
		buf = appendLenPrefixed(buf, ExtraKey+"."+x.name)
		buf = appendLenPrefixed(buf, string(x.value))
	}
	return h.Sum(buf)
}

// claims makes one token per unique set whose fields are all filled: the
// keyed hash of the set's compared values, so that no claim can be turned
// back into a phone number by trying them all.
func (f *Form) claims(h *Hasher, vals []value) []string {
	var out []string
	for _, set := range f.unique {
		buf := []byte("formd/claim/v2\n")
		buf = appendLenPrefixed(buf, f.Def.ID)
		complete := true
		for _, i := range set {
			if !vals[i].set {
				complete = false
				break
			}
			buf = appendLenPrefixed(buf, f.fields[i].Name)
			buf = appendLenPrefixed(buf, vals[i].cmp)
		}
		if !complete {
			continue
		}
		sum := h.Sum(buf)
		out = append(out, hex.EncodeToString(sum[:16]))
	}
	return out
}

func appendLenPrefixed(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, '\n')
}

// appendJSONString writes s as a JSON string. s is valid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hexdig = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			switch c {
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexdig[c>>4], hexdig[c&0xf])
			}
		case c == '<' || c == '>' || c == '&':
			// Escaped as encoding/json does, so data pasted into HTML stays inert.
			b = append(b, '\\', 'u', '0', '0', hexdig[c>>4], hexdig[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
