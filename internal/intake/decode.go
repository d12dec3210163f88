package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/formd/formd/internal/problem"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formd/formd/internal/form"
)

// body is a decoded submission: the values by field name (string,
// json.Number, bool, []any or nil, as form.Validate takes them) and the
// reserved fields pulled out of them.
type body struct {
	values map[string]any
	key    string // the _key field
	shown  time.Time
	// html says the body came from a plain HTML form (urlencoded or
	// multipart), so the answer may be a redirect.
	html bool
}

// limits on a multipart body beyond its byte size.
const (
	maxParts     = 1000
	maxFieldSize = 64 << 10
)

// decodeBody reads the request body by its content type, within limit
// bytes. Errors are *problem.Problem (400, 413, 415).
func decodeBody(r *http.Request, limit int64) (body, error) { return decodeBodyWith(r, limit, nil) }

// fileSink stores a file part of a multipart body and returns the id of
// the upload it made (see postedFiles); nil refuses file parts (415).
type fileSink interface {
	// allowance is how many bytes of files the body may carry beyond
	// the limit.
	allowance() int64
	put(field, filename, key string, n int, r io.Reader) (string, error)
}

// decodeBodyWith is decodeBody that takes multipart file parts into
// files.
func decodeBodyWith(r *http.Request, limit int64, files fileSink) (body, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return body{}, problem.New(problem.CodeUnsupportedMediaType, "the request has no Content-Type; send application/json, application/x-www-form-urlencoded or multipart/form-data")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return body{}, problem.New(problem.CodeUnsupportedMediaType, "the Content-Type header cannot be parsed")
	}
	rd := &capReader{r: r.Body, left: limit, limit: limit}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		raw, err := readAll(rd)
		if err != nil {
			return body{}, err
		}
		return decodeJSON(raw)
	case mt == "application/x-www-form-urlencoded":
		raw, err := readAll(rd)
		if err != nil {
			return body{}, err
		}
		return decodeURLEncoded(raw)
	case mt == "multipart/form-data":
		boundary := params["boundary"]
		if boundary == "" {
			return body{}, problem.New(problem.CodeInvalidRequest, "multipart/form-data needs a boundary parameter")
		}
		if files != nil {
			rd.left += files.allowance()
			rd.limit += files.allowance()
		}
		return decodeMultipart(rd, boundary, files, r.Header.Get("Idempotency-Key"))
	}
	return body{}, problem.New(problem.CodeUnsupportedMediaType, fmt.Sprintf("%s is not accepted; send application/json, application/x-www-form-urlencoded or multipart/form-data", mt))
}

// capReader reads at most limit bytes and remembers whether the body had
// more, so that an oversized body is told apart from a malformed one.
type capReader struct {
	r     io.Reader
	left  int64
	limit int64
	over  bool
}

var errOverLimit = errors.New("body over the limit")

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over = true
			return 0, errOverLimit
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// failure turns a read or parse error into the right problem.
func (c *capReader) failure(what string) *problem.Problem {
	if c.over {
		return problem.New(problem.CodePayloadTooLarge, fmt.Sprintf("the body is over the limit of %d bytes", c.limit))
	}
	return problem.New(problem.CodeInvalidRequest, what)
}

// failureOr is 413 when the body ran over its limit, else err (a file
// part that could not be stored).
func (c *capReader) failureOr(err error) error {
	if c.over {
		return c.failure("")
	}
	return err
}

func readAll(rd *capReader) ([]byte, error) {
	raw, err := io.ReadAll(rd)
	if err != nil {
		return nil, rd.failure("the body could not be read")
	}
	return raw, nil
}

// decodeJSON reads a JSON object of field → value. Text that is not valid
// UTF-8 is refused field by field (422), as in a form post, rather than
// silently turned into U+FFFD by the decoder.
func decodeJSON(raw []byte) (body, error) {
	if !utf8.Valid(raw) {
		return body{}, invalidUTF8Fields(raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body{}, problem.New(problem.CodeInvalidRequest, "the body is not valid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return body{}, problem.New(problem.CodeInvalidRequest, "the body has data after the JSON object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return body{}, problem.New(problem.CodeInvalidRequest, "the body must be a JSON object of field names to values")
	}
	b := body{values: obj}
	return b, b.takeReserved()
}

// invalidUTF8Fields names the members of a JSON object whose name or value
// is not valid UTF-8.
func invalidUTF8Fields(raw []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return problem.New(problem.CodeInvalidRequest, "the body must be a JSON object of field names to values")
	}
	ve := &form.ValidationError{}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if utf8.ValidString(name) && utf8.Valid(members[name]) {
			continue
		}
		field := name
		if !utf8.ValidString(name) {
			field = strings.ToValidUTF8(name, "?")
		}
		ve.Errors = append(ve.Errors, form.FieldError{Field: field, Code: "invalid-value", Message: "is not valid UTF-8 text"})
	}
	if len(ve.Errors) == 0 {
		ve.Errors = append(ve.Errors, form.FieldError{Field: "?", Code: "invalid-value", Message: "is not valid UTF-8 text"})
	}
	return ve
}

func decodeURLEncoded(raw []byte) (body, error) {
	q, err := url.ParseQuery(string(raw))
	if err != nil {
		return body{}, problem.New(problem.CodeInvalidRequest, "the form-urlencoded body cannot be parsed")
	}
	b := body{values: make(map[string]any, len(q)), html: true}
	for k, vs := range q {
		b.values[k] = listOrOne(vs)
	}
	return b, b.takeReserved()
}

func decodeMultipart(rd *capReader, boundary string, files fileSink, key string) (body, error) {
	mr := multipart.NewReader(rd, boundary)
	fields := map[string][]string{}
	nfiles := 0
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return body{}, rd.failure("the multipart body cannot be parsed")
		}
		if n >= maxParts {
			return body{}, problem.New(problem.CodeInvalidRequest, fmt.Sprintf("the multipart body has more than %d parts", maxParts))
		}
		name := part.FormName()
		if part.FileName() != "" {
			if files == nil {
				return body{}, problem.New(problem.CodeUnsupportedMediaType, "file uploads are not accepted; send only text fields")
			}
			if key == "" && len(fields[form.KeyField]) == 1 {
				key = fields[form.KeyField][0] // the hosted page sends _key first
			}
			id, err := files.put(name, part.FileName(), key, nfiles, part)
			if err != nil {
				var p *problem.Problem
				if errors.As(err, &p) {
					return body{}, p
				}
				return body{}, rd.failureOr(err)
			}
			nfiles++
			fields[name] = append(fields[name], form.UploadPrefix+id)
			continue
		}
		val, err := io.ReadAll(io.LimitReader(part, maxFieldSize+1))
		if err != nil {
			return body{}, rd.failure("the multipart body cannot be read")
		}
		if len(val) > maxFieldSize {
			return body{}, problem.New(problem.CodePayloadTooLarge, fmt.Sprintf("field %q is over %d bytes", name, maxFieldSize))
		}
		if name != "" {
			fields[name] = append(fields[name], string(val))
		}
	}
	b := body{values: make(map[string]any, len(fields)), html: true}
	for k, vs := range fields {
		b.values[k] = listOrOne(vs)
	}
	return b, b.takeReserved()
}

// FormValues are a plain HTML form's values as a submission's decoder
// reads them (one value, or a list for several), for the hosted page's
// own forms.
func FormValues(q url.Values) map[string]any {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		out[k] = listOrOne(vs)
	}
	return out
}

func listOrOne(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	l := make([]any, len(vs))
	for i, v := range vs {
		l[i] = v
	}
	return l
}

// takeReserved pulls _key and _ts out of the values.
func (b *body) takeReserved() error {
	if v, ok := b.values[form.KeyField]; ok {
		s, isStr := v.(string)
		if !isStr {
			return problem.New(problem.CodeInvalidRequest, "_key must be a single string")
		}
		b.key = s
		delete(b.values, form.KeyField)
	}
	if v, ok := b.values[form.TimeField]; ok {
		delete(b.values, form.TimeField)
		var ms int64
		var err error
		switch t := v.(type) {
		case string:
			ms, err = strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		case json.Number:
			ms, err = t.Int64()
		default:
			err = errors.New("not a number")
		}
		// A malformed _ts is ignored rather than refused: it only feeds the
		// spam check, and people must never be blocked by it.
		if err == nil && ms > 0 {
			b.shown = time.UnixMilli(ms)
		}
	}
	return nil
}

// parseKey reads an Idempotency-Key header: 1-255 visible ASCII characters,
// bare or as an RFC 8941 sf-string ("..." with \" and \\ escapes).
func parseKey(h string) (string, error) {
	h = strings.Trim(h, " \t")
	if strings.HasPrefix(h, `"`) {
		var b strings.Builder
		closed := false
		for i := 1; i < len(h); i++ {
			c := h[i]
			switch {
			case c == '\\':
				if i+1 >= len(h) || (h[i+1] != '"' && h[i+1] != '\\') {
					return "", errBadKey
				}
				b.WriteByte(h[i+1])
				i++
			case c == '"':
				if i != len(h)-1 {
					return "", errBadKey
				}
				closed = true
			case c < 0x20 || c > 0x7e:
				return "", errBadKey
			default:
				b.WriteByte(c)
			}
		}
		if !closed {
			return "", errBadKey
		}
		h = b.String()
	}
	if !validKey(h) {
		return "", errBadKey
	}
	return h, nil
}

var errBadKey = problem.New(problem.CodeInvalidRequest, "the idempotency key must be 1 to 255 visible ASCII characters (not . or ..), bare or as an RFC 8941 quoted string")

func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 || k == "." || k == ".." {
		// "." and ".." are rewritten out of URLs by clients and proxies,
		// so the status URL of such a key would not reach it.
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// preference is what a Prefer header asks for.
type preference struct {
	async   bool
	wait    time.Duration
	hasWait bool
}

// parsePrefer reads the Prefer headers (RFC 7240) for respond-async and
// wait=N. Preferences it does not know, and a wait that is not a number
// of seconds from 0 to 10^6, are ignored, as the RFC says: a preference
// never makes a request fail.
func parsePrefer(h []string) preference {
	var p preference
	for _, line := range h {
		for _, item := range strings.Split(line, ",") {
			tok, _, _ := strings.Cut(strings.TrimSpace(item), ";")
			name, val, hasVal := strings.Cut(tok, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch name {
			case "respond-async":
				p.async = true
			case "wait":
				n, err := strconv.ParseFloat(val, 64)
				if !hasVal || err != nil || math.IsNaN(n) || n < 0 || n > 1e6 {
					continue
				}
				p.wait, p.hasWait = time.Duration(n*float64(time.Second)), true
			}
		}
	}
	return p
}

// ParseKey reads an Idempotency-Key header as submissions do, for the
// other writes that take one (the door's check-ins).
func ParseKey(h string) (string, error) { return parseKey(h) }
