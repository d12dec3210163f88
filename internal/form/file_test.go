package form

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const photoYAML = `
id: exam-2027
fields:
  - {name: name,  type: text, required: true}
  - {name: photo, type: file, required: true, max_size: 2MiB, accept: [image/jpeg, image/png]}
  - {name: docs,  type: file, max_files: 3, accept: [.pdf, "image/*"]}
`

func TestFileFieldSettings(t *testing.T) {
	t.Parallel()
	f := mustForm(t, photoYAML)
	photo, _ := f.Field("photo")
	if photo.MaxSizeOf() != 2<<20 || photo.MaxFilesOf() != 1 {
		t.Fatalf("photo limits: %d bytes, %d files", photo.MaxSizeOf(), photo.MaxFilesOf())
	}
	docs, _ := f.Field("docs")
	if docs.MaxSizeOf() != DefaultMaxSize || docs.MaxFilesOf() != 3 {
		t.Fatalf("docs limits: %d bytes, %d files", docs.MaxSizeOf(), docs.MaxFilesOf())
	}
	for typ, want := range map[string]bool{
		"image/jpeg": true, "image/png": true, "image/gif": false, "application/pdf": false,
		"text/html; charset=utf-8": false,
	} {
		if got := photo.Accepts(typ); got != want {
			t.Errorf("photo accepts %s = %v, want %v", typ, got, want)
		}
	}
	for typ, want := range map[string]bool{"application/pdf": true, "image/webp": true, "application/zip": false} {
		if got := docs.Accepts(typ); got != want {
			t.Errorf("docs accepts %s = %v, want %v", typ, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Size{"2MiB": 2 << 20, "500KiB": 500 << 10, "10MB": 10e6, "1048576": 1 << 20, "1.5MiB": 3 << 19, "1gib": 1 << 30} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "2 parsecs", "-1", "1e9"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) took it", in)
		}
	}
}

func TestSizeShown(t *testing.T) {
	t.Parallel()
	for n, want := range map[Size]string{0: "0 B", 1023: "1023 B", 1 << 10: "1.0 KiB", 3 << 19: "1.5 MiB", 5 << 30: "5.0 GiB"} {
		if got := n.Shown(); got != want {
			t.Errorf("Size(%d).Shown() = %q, want %q", n, got, want)
		}
	}
}

func TestFileFieldRefusesBadSettings(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"{name: f, type: file, max_size: 2 parsecs}":  `unknown unit "parsecs"`,
		"{name: f, type: file, max_size: 0}":          "max_size 0 bytes is out of range",
		"{name: f, type: file, max_size: 10GiB}":      "max_size 10737418240 bytes is out of range",
		"{name: f, type: file, max_files: 0}":         "max_files 0 is out of range: use 1 to 20",
		"{name: f, type: file, accept: [jpeg]}":       `accept[0]: "jpeg" is neither a MIME type`,
		"{name: f, type: file, accept: [.nosuchext]}": `".nosuchext" is an extension formd knows no type for`,
		"{name: f, type: text, max_size: 1MiB}":       "max_size does not apply to type text (it applies to file)",
		"{name: f, type: text, accept: [image/png]}":  "accept does not apply to type text",
		"{name: f, type: number, max_files: 2}":       "max_files does not apply to type number",
	}
	for field, want := range cases {
		_, err := Parse([]byte("id: x\nfields:\n  - "+field+"\n"), "x.yaml")
		var de *DefinitionError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", field, err, want)
		}
	}
}

func TestValidateFileReferences(t *testing.T) {
	t.Parallel()
	f := mustForm(t, photoYAML)
	a, err := f.Validate(map[string]any{"name": "Li", "photo": "upload:abc123", "docs": []any{"upload:d1", "upload:d2", "upload:d1"}}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	want := []UploadRef{{"photo", "abc123"}, {"docs", "d1"}, {"docs", "d2"}}
	if len(a.Uploads) != len(want) {
		t.Fatalf("uploads %v, want %v", a.Uploads, want)
	}
	for i := range want {
		if a.Uploads[i] != want[i] {
			t.Fatalf("uploads %v, want %v", a.Uploads, want)
		}
	}
	var data map[string]any
	if err := json.Unmarshal(a.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["photo"] != "upload:abc123" || len(data["docs"].([]any)) != 2 || len(data[UploadsKey].([]any)) != 3 {
		t.Fatalf("data %s", a.Data)
	}

	for name, tc := range map[string]struct {
		in    map[string]any
		field string
		code  string
	}{
		"missing":     {map[string]any{"name": "Li"}, "photo", "required"},
		"not a ref":   {map[string]any{"name": "Li", "photo": "photo.jpg"}, "photo", "invalid-upload"},
		"bad id":      {map[string]any{"name": "Li", "photo": "upload:../../etc/passwd"}, "photo", "invalid-upload"},
		"two photos":  {map[string]any{"name": "Li", "photo": []any{"upload:a", "upload:b"}}, "photo", "too-many-files"},
		"four docs":   {map[string]any{"name": "Li", "photo": "upload:a", "docs": []any{"upload:1", "upload:2", "upload:3", "upload:4"}}, "docs", "too-many-files"},
		"not strings": {map[string]any{"name": "Li", "photo": json.Number("1")}, "photo", "invalid-upload"},
	} {
		_, err := f.Validate(tc.in, testHasher)
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Field != tc.field || ve.Errors[0].Code != tc.code {
			t.Errorf("%s: got %v, want %s: %s", name, err, tc.field, tc.code)
		}
	}
}

func TestUploadsKeyCannotBeSubmitted(t *testing.T) {
	t.Parallel()
	f := mustForm(t, photoYAML)
	a, err := f.Validate(map[string]any{"name": "Li", "photo": "upload:mine", UploadsKey: []any{"someone-elses"}}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(a.Data, &data); err != nil {
		t.Fatal(err)
	}
	if string(data[UploadsKey]) != `["mine"]` {
		t.Fatalf("%s = %s; a submitted %s must stay under %s", UploadsKey, data[UploadsKey], UploadsKey, ExtraKey)
	}
}

// accept: [image/jpg] is the JPEG that files sniff as image/jpeg (issue
// 34: it passed check and then every real JPEG was refused).
func TestAcceptAliases(t *testing.T) {
	t.Parallel()
	f := mustForm(t, "id: a\nfields:\n  - {name: photo, type: file, accept: [image/jpg, IMAGE/X-PNG, .pdf]}\n")
	photo, _ := f.Field("photo")
	for typ, want := range map[string]bool{"image/jpeg": true, "image/png": true, "application/pdf": true, "image/gif": false} {
		if got := photo.Accepts(typ); got != want {
			t.Errorf("accepts %s = %v, want %v", typ, got, want)
		}
	}
	if got := strings.Join(photo.AcceptTypes(), ","); got != "image/jpeg,image/png,.pdf" {
		t.Errorf("AcceptTypes %q", got)
	}
}
