package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/xuri/excelize/v2"
)

type rows []store.Row

func (r rows) Export(_ context.Context, _ string, fn func(store.Row) error) error {
	for _, row := range r {
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

func testForm(t *testing.T) *form.Form {
	t.Helper()
	forms, err := form.Parse([]byte(`
id: f
fields:
  - {name: name, type: text}
  - {name: tickets, type: number}
  - {name: extras, type: multiselect, options: [a, b]}
  - {name: ok, type: checkbox}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	return forms[0]
}

var at = time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)

var sample = rows{
	{Seq: 1, ID: "id1", Form: "f", Key: "k1", Status: "stored", ReceivedAt: at, Data: json.RawMessage(`{"name":"=HYPERLINK(\"http://x\")","tickets":2,"extras":["a","b"],"ok":true}`)},
	{Seq: 2, ID: "id2", Form: "f", Key: "k2", Status: "waitlisted", ReceivedAt: at, Data: json.RawMessage(`{"name":"@SUM(A1)","ok":false}`)},
	{Seq: 3, ID: "id3", Form: "f", Key: "-k3", Status: "duplicate", ReceivedAt: at, Data: json.RawMessage(`{"name":"+1 plain, \"quoted\""}`)},
}

func TestCSVNeutralizesFormulas(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(context.Background(), sample, testForm(t), "csv", &buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"id", "key", "status", "received_at", "name", "tickets", "extras", "ok"},
		{"id1", "k1", "stored", "2027-03-01T09:00:00.000000Z", `'=HYPERLINK("http://x")`, "2", "a; b", "true"},
		{"id2", "k2", "waitlisted", "2027-03-01T09:00:00.000000Z", "'@SUM(A1)", "", "", "false"},
		{"id3", "'-k3", "duplicate", "2027-03-01T09:00:00.000000Z", `'+1 plain, "quoted"`, "", "", ""},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d\n got %q\nwant %q", i, recs[i], want[i])
		}
	}
}

func TestJSONL(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(context.Background(), sample, testForm(t), "jsonl", &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "form", "key", "status", "received_at", "data"} {
		if _, ok := row[k]; !ok {
			t.Errorf("jsonl row lacks %q: %s", k, lines[0])
		}
	}
	// JSON is data, not a spreadsheet: values stay as submitted.
	if !strings.Contains(lines[0], `=HYPERLINK`) || strings.Contains(lines[0], `'=`) {
		t.Errorf("jsonl must keep values unchanged: %s", lines[0])
	}
}

func TestXLSX(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(context.Background(), sample, testForm(t), "xlsx", &buf); err != nil {
		t.Fatal(err)
	}
	x, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	got, err := x.GetCellValue("Sheet1", "E2")
	if err != nil || got != `'=HYPERLINK("http://x")` {
		t.Fatalf("E2 = %q, %v", got, err)
	}
	if v, _ := x.GetCellValue("Sheet1", "C4"); v != "duplicate" {
		t.Fatalf("C4 = %q", v)
	}
}

func TestUnknownFormat(t *testing.T) {
	t.Parallel()
	if err := Write(context.Background(), sample, testForm(t), "pdf", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "csv, jsonl, xlsx") {
		t.Fatalf("err = %v", err)
	}
}
