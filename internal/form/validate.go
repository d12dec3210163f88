package form

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
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
	// order; fields left empty are absent.
	Data json.RawMessage
	// Fingerprint is SHA-256 over the form id and the normalized values.
	Fingerprint [32]byte
	// Claims holds one opaque token per unique set whose fields are all
	// filled; two submissions with equal normalized values share it.
	Claims []string
}

// Validate checks a decoded body against the form and normalizes it. in maps
// a field name to a string, a json.Number, a bool, a []any of those, or nil,
// as the intake decodes JSON (with UseNumber) and form posts. Unknown names
// are ignored, including the reserved _key and _ts and the honeypot. The
// error, if any, is a *ValidationError.
func (f *Form) Validate(in map[string]any) (*Accepted, error) {
	vals := make([]value, len(f.fields))
	var errs []FieldError
	for i := range f.fields {
		cf := &f.fields[i]
		v, fe := cf.normalize(in[cf.Name])
		if fe != nil {
			fe.Field = cf.Name
			errs = append(errs, *fe)
			continue
		}
		vals[i] = v
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	return &Accepted{
		Data:        f.encode(vals),
		Fingerprint: f.fingerprint(vals),
		Claims:      f.claims(vals),
	}, nil
}

// value is one normalized value: s holds the canonical string (for a
// multiselect, the chosen values joined by \x1f), kind says how to write it
// as JSON, set says whether there is a value at all.
type value struct {
	s    string
	kind byte // 's' string, 'n' number, 'b' bool, 'l' list
	set  bool
}

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
		return value{s: strconv.FormatBool(b), kind: 'b', set: true}, nil
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
	s = strings.TrimSpace(s)
	if s == "" {
		if cf.Required {
			return value{}, fieldErr("required", "is required")
		}
		return value{}, nil
	}
	switch cf.Type {
	case TypeText, TypeTextarea:
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
		return value{s: t, kind: 's', set: true}, nil
	case TypeEmail:
		e := strings.ToLower(norm.NFC.String(s))
		if fe := cf.checkLength(e); fe != nil {
			return value{}, fe
		}
		if !validEmail(e) {
			return value{}, fieldErr("invalid-email", "is not an e-mail address")
		}
		if cf.pattern != nil && !cf.pattern.MatchString(e) {
			return value{}, fieldErr("pattern", "does not have the expected format")
		}
		return value{s: e, kind: 's', set: true}, nil
	case TypePhone:
		p, fe := normalizePhone(s, cf.Region)
		if fe != nil {
			return value{}, fe
		}
		return value{s: p, kind: 's', set: true}, nil
	case TypeNumber:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return value{}, fieldErr("not-a-number", "must be a number")
		}
		if cf.Integer && n != math.Trunc(n) {
			return value{}, fieldErr("not-an-integer", "must be a whole number")
		}
		if cf.hasMin && n < cf.minNum {
			return value{}, boundErr("too-small", "must be at least %v", cf.minNum)
		}
		if cf.hasMax && n > cf.maxNum {
			return value{}, boundErr("too-large", "must be at most %v", cf.maxNum)
		}
		return value{s: strconv.FormatFloat(n, 'f', -1, 64), kind: 'n', set: true}, nil
	case TypeSelect:
		if _, ok := cf.options[s]; !ok {
			return value{}, fieldErr("invalid-option", "is not one of the choices")
		}
		return value{s: s, kind: 's', set: true}, nil
	case TypeDate:
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return value{}, fieldErr("invalid-date", "must be a date written YYYY-MM-DD")
		}
		if cf.minDate != "" && s < cf.minDate {
			return value{}, boundErr("too-early", "must be on or after %s", cf.minDate)
		}
		if cf.maxDate != "" && s > cf.maxDate {
			return value{}, boundErr("too-late", "must be on or before %s", cf.maxDate)
		}
		return value{s: s, kind: 's', set: true}, nil
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
		it = strings.TrimSpace(it)
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
	return value{s: strings.Join(chosen, listSep), kind: 'l', set: true}, nil
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

// encode writes the values as a JSON object in field order.
func (f *Form) encode(vals []value) json.RawMessage {
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
	return append(b, '}')
}

// fingerprint hashes the form id and the present values in field-name order,
// each length-prefixed so that no two different submissions share an input.
func (f *Form) fingerprint(vals []value) [32]byte {
	h := sha256.New()
	var buf []byte
	buf = append(buf, "formd/fp/v1\n"...)
	buf = appendLenPrefixed(buf, f.Def.ID)
	for _, i := range f.order {
		if !vals[i].set {
			continue
		}
		buf = appendLenPrefixed(buf, f.fields[i].Name)
		buf = appendLenPrefixed(buf, vals[i].s)
	}
	h.Write(buf)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func (f *Form) claims(vals []value) []string {
	var out []string
	for _, set := range f.unique {
		buf := []byte("formd/claim/v1\n")
		complete := true
		for _, i := range set {
			if !vals[i].set {
				complete = false
				break
			}
			buf = appendLenPrefixed(buf, f.fields[i].Name)
			buf = appendLenPrefixed(buf, vals[i].s)
		}
		if !complete {
			continue
		}
		sum := sha256.Sum256(buf)
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
