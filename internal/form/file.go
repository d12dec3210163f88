package form

import (
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// File fields: the bytes come first, as resumable uploads (package
// uploads), and the submission names them as "upload:<id>", a list when
// the field takes more than one file.

// Limits of a file field.
const (
	// DefaultMaxSize is a file field's max_size when it sets none.
	DefaultMaxSize = 10 << 20
	// MaxMaxSize bounds what max_size may say, so that one upload cannot
	// fill a disk by its definition alone.
	MaxMaxSize = 5 << 30
	// MaxMaxFiles bounds max_files.
	MaxMaxFiles = 20
	// DefaultMaxPixels is a file field's max_pixels when it sets none:
	// 50 megapixels, a 48 MP phone photo at full size (8000 × 6000).
	DefaultMaxPixels = 50_000_000
	// MaxMaxPixels bounds what max_pixels may say (a gigapixel decodes
	// to 4 GB).
	MaxMaxPixels = 1_000_000_000
)

// UploadPrefix starts a file field's value: "upload:<id>".
const UploadPrefix = "upload:"

// UploadsKey is the member of an entry's data that lists the ids of the
// uploads its file fields name, in field order, so that a store decision
// can claim them without knowing the form. No field's name can start with
// '_', and the fields a form does not define are kept under ExtraKey, so
// no submitted value can put a name here.
const UploadsKey = "_uploads"

// uploadIDPattern is what an upload id may be: the uploads package makes
// them as 32 hex digits; anything longer or stranger is refused before it
// is looked up.
var uploadIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// UploadRef is one upload a submission names: the field that names it
// and its id.
type UploadRef struct {
	Field string
	ID    string
}

// Size is a number of bytes, written as a number or with a unit: 2MiB,
// 500KiB, 1GiB, 10MB, 1.5MiB.
type Size int64

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
}

var sizePattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)

// ParseSize reads a size such as 2MiB, 10MB or 1048576.
func ParseSize(s string) (Size, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size: write a number of bytes or a number with a unit, such as 2MiB, 500KiB or 10MB", s)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q: use B, KiB, MiB, GiB, KB, MB or GB", s, m[2])
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	return Size(n * unit), nil
}

// UnmarshalYAML reads a size written as a number of bytes or with a unit.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size such as 2MiB", n.Line)
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	*z = v
	return nil
}

// String writes the size with the largest binary unit that divides it.
func (z Size) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(z) >= u.n && int64(z)%u.n == 0 {
			return strconv.FormatInt(int64(z)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(z), 10)
}

// Shown writes the size as people read it, to one decimal in the largest
// binary unit below it (max_size takes the same units): "1.5 MiB" for a
// file's size in an e-mail or the console.
func (z Size) Shown() string {
	n := int64(z)
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// checkFile checks a file field's settings (max_size, max_files, accept).
func (c *compiler) checkFile(name string, fd Field) {
	if fd.MaxSize != nil && (*fd.MaxSize < 1 || *fd.MaxSize > MaxMaxSize) {
		c.add(name, fmt.Sprintf("max_size %d bytes is out of range: use 1 byte to %s, such as 2MiB", int64(*fd.MaxSize), Size(MaxMaxSize)))
	}
	if fd.MaxFiles != nil && (*fd.MaxFiles < 1 || *fd.MaxFiles > MaxMaxFiles) {
		c.add(name, fmt.Sprintf("max_files %d is out of range: use 1 to %d", *fd.MaxFiles, MaxMaxFiles))
	}
	if fd.MaxPixels != nil && (*fd.MaxPixels < 1 || *fd.MaxPixels > MaxMaxPixels) {
		c.add(name, fmt.Sprintf("max_pixels %d is out of range: use 1 to %d (width × height)", *fd.MaxPixels, int64(MaxMaxPixels)))
	}
	for i, a := range fd.Accept {
		if _, err := acceptType(a); err != nil {
			c.add(name, fmt.Sprintf("accept[%d]: %v", i, err))
		}
	}
}

// acceptType is the MIME type (or type/* pattern) an accept entry stands
// for: the entry itself for a type, the type Go's table gives an extension.
func acceptType(a string) (string, error) {
	a = strings.ToLower(strings.TrimSpace(a))
	if strings.HasPrefix(a, ".") {
		t := mime.TypeByExtension(a)
		if t == "" || len(a) < 2 {
			return "", fmt.Errorf("%q is an extension formd knows no type for; give the MIME type instead, such as application/pdf", a)
		}
		base, _, _ := strings.Cut(t, ";")
		return strings.TrimSpace(base), nil
	}
	major, minor, ok := strings.Cut(a, "/")
	if !ok || major == "" || minor == "" || strings.ContainsAny(a, " ;,") || (major == "*" && minor != "*") {
		return "", fmt.Errorf("%q is neither a MIME type (such as image/jpeg or image/*) nor an extension (such as .pdf)", a)
	}
	if t, ok := typeAliases[a]; ok {
		return t, nil
	}
	return a, nil
}

// typeAliases are names people write for a type that files are sniffed
// as under another (issue 34: accept: [image/jpg] passed and then refused
// every JPEG, which sniffs as image/jpeg).
var typeAliases = map[string]string{
	"image/jpg":                   "image/jpeg",
	"image/pjpeg":                 "image/jpeg",
	"image/x-png":                 "image/png",
	"image/x-ms-bmp":              "image/bmp",
	"application/x-pdf":           "application/pdf",
	"audio/mp3":                   "audio/mpeg",
	"audio/x-wav":                 "audio/wav",
	"text/comma-separated-values": "text/csv",
}

// AcceptTypes are the field's accept entries as the MIME types (or type/*
// patterns) they stand for, aliases resolved: what a page's accept
// attribute should list.
func (f Field) AcceptTypes() []string {
	out := make([]string, 0, len(f.Accept))
	for _, a := range f.Accept {
		if strings.HasPrefix(strings.TrimSpace(a), ".") {
			out = append(out, strings.ToLower(strings.TrimSpace(a)))
			continue
		}
		if t, err := acceptType(a); err == nil {
			out = append(out, t)
		}
	}
	return out
}

// MaxSizeOf is the largest file the field takes, in bytes.
func (f Field) MaxSizeOf() int64 {
	if f.MaxSize != nil {
		return int64(*f.MaxSize)
	}
	return DefaultMaxSize
}

// MaxPixelsOf is the largest image, width × height, the field takes.
func (f Field) MaxPixelsOf() int64 {
	if f.MaxPixels != nil {
		return *f.MaxPixels
	}
	return DefaultMaxPixels
}

// MaxFilesOf is how many files the field takes.
func (f Field) MaxFilesOf() int {
	if f.MaxFiles != nil {
		return *f.MaxFiles
	}
	return 1
}

// Accepts says whether a file whose bytes were sniffed as typ (a MIME
// type, parameters allowed) may be given to the field.
func (f Field) Accepts(typ string) bool {
	if len(f.Accept) == 0 {
		return true
	}
	base, _, _ := strings.Cut(strings.ToLower(typ), ";")
	base = strings.TrimSpace(base)
	major, _, _ := strings.Cut(base, "/")
	return slices.ContainsFunc(f.Accept, func(a string) bool {
		t, err := acceptType(a)
		if err != nil {
			return false
		}
		switch {
		case t == "*/*":
			return true
		case strings.HasSuffix(t, "/*"):
			return strings.TrimSuffix(t, "/*") == major
		}
		return t == base
	})
}

// normalizeFile reads a file field's value: "upload:<id>", or a list of
// them up to max_files. The value is stored as written (the list in its
// order, each id once).
func (cf *compiledField) normalizeFile(raw any) (value, []string, *FieldError) {
	var items []string
	switch v := raw.(type) {
	case nil:
	case string:
		items = []string{v}
	case []string:
		items = v
	case []any:
		for _, it := range v {
			s, ok := it.(string)
			if !ok {
				return value{}, nil, fieldErr("invalid-upload", "must name uploads as \"upload:<id>\"")
			}
			items = append(items, s)
		}
	default:
		return value{}, nil, fieldErr("invalid-upload", "must name uploads as \"upload:<id>\"")
	}
	var ids []string
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		id, ok := strings.CutPrefix(it, UploadPrefix)
		if !ok || !uploadIDPattern.MatchString(id) {
			return value{}, nil, fieldErr("invalid-upload", "must name uploads as \"upload:<id>\", with the id the upload's Location ends with")
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		if cf.Required {
			return value{}, nil, fieldErr("required", "is required")
		}
		return value{}, nil, nil
	}
	if max := cf.MaxFilesOf(); len(ids) > max {
		return value{}, nil, boundErr("too-many-files", "takes at most %d files", max)
	}
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = UploadPrefix + id
	}
	if cf.MaxFilesOf() == 1 {
		return same(refs[0], 's'), ids, nil
	}
	return same(strings.Join(refs, listSep), 'l'), ids, nil
}
