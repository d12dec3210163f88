package export

import (
	"context"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/uploads/links"
)

func TestFileData(t *testing.T) {
	t.Parallel()
	fs, err := form.Parse([]byte("id: f\nfields:\n  - {name: name, type: text}\n  - {name: photo, type: file}\n  - {name: docs, type: file, max_files: 2}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	f := fs[0]
	data := []byte(`{"name":"Li","photo":"upload:p1","docs":["upload:d1","upload:d2"],"_uploads":["p1","d1","d2"]}`)
	files := func(_ context.Context, id string) (map[string][]links.File, error) {
		return map[string][]links.File{
			"photo": {{Name: "me.jpg", Type: "image/jpeg", Size: 3, SHA256: "ab", URL: "/v1/files/e/p1?exp=1&sig=x"}},
			"docs":  {{Name: "a.pdf", Type: "application/pdf", Size: 1, SHA256: "cd", URL: "/d1"}, {Name: "b.pdf", Type: "application/pdf", Size: 2, SHA256: "ef", URL: "/d2"}},
		}, nil
	}
	got, err := FileData(context.Background(), f, "e", data, files)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"Li","photo":{"name":"me.jpg","type":"image/jpeg","size":3,"sha256":"ab","url":"/v1/files/e/p1?exp=1&sig=x"},` +
		`"docs":[{"name":"a.pdf","type":"application/pdf","size":1,"sha256":"cd","url":"/d1"},{"name":"b.pdf","type":"application/pdf","size":2,"sha256":"ef","url":"/d2"}]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Without links the references stay, and the internal list still goes.
	got, _ = FileData(context.Background(), f, "e", data, nil)
	if want := `{"name":"Li","photo":"upload:p1","docs":["upload:d1","upload:d2"]}`; string(got) != want {
		t.Fatalf("without links: %s", got)
	}
	// Data naming no upload is untouched.
	plain := []byte(`{"name":"Li"}`)
	if got, _ := FileData(context.Background(), f, "e", plain, files); string(got) != string(plain) {
		t.Fatalf("plain data changed: %s", got)
	}
}
