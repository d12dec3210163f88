package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/formd/formd/internal/uploads/links"
)

// exportRows runs formd export of form on data as JSON lines and decodes
// each line into a T.
func exportRows[T any](t *testing.T, data, form string) []T {
	t.Helper()
	var exp, expErr bytes.Buffer
	if code := run([]string{"export", "--data", data, "--form", form, "--format", "jsonl"}, &exp, &expErr); code != 0 {
		t.Fatalf("formd export exit %d: %s", code, expErr.String())
	}
	return decodeRows[T](t, exp.Bytes())
}

// decodeRows decodes each line of a JSON lines export into a T.
func decodeRows[T any](t *testing.T, jsonl []byte) []T {
	t.Helper()
	var rows []T
	for line := range bytes.Lines(jsonl) {
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var row T
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatalf("export line %s: %v", line, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// exportKeys counts the entries of form by key.
func exportKeys(t *testing.T, data, form string) map[string]int {
	t.Helper()
	keys := map[string]int{}
	for _, row := range exportRows[struct{ Key string }](t, data, form) {
		keys[row.Key]++
	}
	return keys
}

// cvRow is an exported entry of the cv form: its files.
type cvRow struct {
	ID   string
	Data struct {
		CV []links.File `json:"cv"`
	}
}

// filesRow is an exported entry of the files form (uploadCrashForms):
// whose it is and its file.
type filesRow struct {
	Key  string `json:"key"`
	Data struct {
		Name string       `json:"name"`
		Scan exportedFile `json:"scan"`
	} `json:"data"`
}

// exportedFile is a file as the export lists it.
type exportedFile struct{ SHA256, URL string }

// uploadID is the id of the upload the file's signed link serves.
func (f exportedFile) uploadID() string {
	id := f.URL[strings.LastIndex(f.URL, "/")+1:]
	id, _, _ = strings.Cut(id, "?")
	return id
}

// exportFiles runs the formd binary's export of the files form on data.
func exportFiles(t *testing.T, bin, data string) []filesRow {
	t.Helper()
	out, err := exec.Command(bin, "export", "--data", data, "--form", "files", "--format", "jsonl").Output()
	if err != nil {
		t.Fatalf("formd export: %v", err)
	}
	return decodeRows[filesRow](t, out)
}
