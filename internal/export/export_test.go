package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strconv"
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
  - {name: name, type: text, label: {en: Name, zh: 姓名}}
  - {name: tickets, type: number}
  - {name: extras, type: multiselect, options: [a, b]}
  - {name: ok, type: checkbox}
  - {name: phone, type: phone}
  - {name: day, type: date}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	return forms[0]
}

var at = time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)

var sample = rows{
	{Seq: 1, ID: "id1", Form: "f", Key: "k1", Status: "stored", ReceivedAt: at, Data: json.RawMessage(`{"name":"=HYPERLINK(\"http://x\")","tickets":2,"extras":["a","b"],"ok":true,"phone":"+8613800138000","day":"2027-03-02","_extra":{"utm":"poster"}}`)},
	{Seq: 2, ID: "id2", Form: "f", Key: "k2", Status: "waitlisted", ReceivedAt: at, Data: json.RawMessage(`{"name":"@SUM(A1)","ok":false}`)},
	{Seq: 3, ID: "id3", Form: "f", Key: "-k3", Status: "duplicate", ReceivedAt: at, Data: json.RawMessage(`{"name":"+1 plain, \"quoted\"","tickets":123456789012345678901234567890}`)},
	{Seq: 4, ID: "id4", Form: "f", Key: "k4", Status: "stored", ReceivedAt: at, Data: json.RawMessage(`{"name":"a;=cmd|' /C calc'!A0"}`)},
}

func TestCSVNeutralizesFormulas(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(context.Background(), sample, testForm(t), "csv", &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	raw := buf.String()
	// Every cell is quoted, so that a spreadsheet splitting on ';' keeps
	// `a;=cmd` one cell rather than making a formula of its second half.
	if !strings.Contains(raw, `"a;=cmd|' /C calc'!A0"`) {
		t.Errorf("the ;= cell is not quoted whole: %s", raw)
	}
	// Read as a spreadsheet in a locale that splits on ';' would, no cell
	// starts a formula.
	semi := csv.NewReader(strings.NewReader(raw))
	semi.Comma, semi.LazyQuotes, semi.FieldsPerRecord = ';', true, -1
	for {
		rec, err := semi.Read()
		if err != nil {
			break
		}
		for _, cell := range rec {
			if c := strings.TrimLeft(cell, `" `); c != "" && strings.ContainsRune("=+-@", rune(c[0])) {
				t.Errorf("split on ';', a cell starts a formula: %q", cell)
			}
		}
	}
	recs, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"id", "key", "status", "received_at", "name", "tickets", "extras", "ok", "phone", "day", "extra"},
		{"id1", "k1", "stored", "2027-03-01T09:00:00.000000Z", `'=HYPERLINK("http://x")`, "2", "a; b", "true", "'+8613800138000", "2027-03-02", `{"utm":"poster"}`},
		{"id2", "k2", "waitlisted", "2027-03-01T09:00:00.000000Z", "'@SUM(A1)", "", "", "false", "", "", ""},
		{"id3", "'-k3", "duplicate", "2027-03-01T09:00:00.000000Z", `'+1 plain, "quoted"`, "123456789012345678901234567890", "", "", "", "", ""},
		{"id4", "k4", "stored", "2027-03-01T09:00:00.000000Z", "a;=cmd|' /C calc'!A0", "", "", "", "", "", ""},
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
	if err := Write(context.Background(), sample, testForm(t), "jsonl", &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
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
	// The fields the form does not define are kept, under extra.
	if !strings.Contains(lines[0], `"extra":{"utm":"poster"}`) || strings.Contains(lines[0], "_extra") {
		t.Errorf("jsonl extra: %s", lines[0])
	}
}

// TestXLSX: cells are typed — text as text (never a formula, and without
// an apostrophe), numbers as numbers a spreadsheet can sum (when a float
// holds them exactly), dates and times as dates.
func TestXLSX(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(context.Background(), sample, testForm(t), "xlsx", &buf, Options{Labels: true, Lang: "zh"}); err != nil {
		t.Fatal(err)
	}
	x, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for cell, want := range map[string]struct {
		value string
		typ   excelize.CellType
	}{
		"E1": {"姓名", excelize.CellTypeInlineString},
		"E2": {`=HYPERLINK("http://x")`, excelize.CellTypeInlineString},
		"F2": {"2", excelize.CellTypeUnset},
		"I2": {"+8613800138000", excelize.CellTypeInlineString},
		"F4": {"123456789012345678901234567890", excelize.CellTypeInlineString},
		"C4": {"duplicate", excelize.CellTypeInlineString},
		"K2": {`{"utm":"poster"}`, excelize.CellTypeInlineString},
	} {
		got, err := x.GetCellValue("Sheet1", cell)
		if err != nil || got != want.value {
			t.Errorf("%s = %q, %v; want %q", cell, got, err, want.value)
		}
		typ, err := x.GetCellType("Sheet1", cell)
		text := typ == excelize.CellTypeInlineString || typ == excelize.CellTypeSharedString
		if err != nil || (want.typ == excelize.CellTypeInlineString) != text || (!text && typ != want.typ) {
			t.Errorf("%s has type %v, want %v", cell, typ, want.typ)
		}
	}
	if f, err := x.GetCellFormula("Sheet1", "E2"); err != nil || f != "" {
		t.Errorf("E2 holds a formula: %q %v", f, err)
	}
	for _, cell := range []string{"D2", "J2"} {
		raw, err := x.GetCellValue("Sheet1", cell, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := strconv.ParseFloat(raw, 64); err != nil {
			t.Errorf("%s is %q, not a date serial number", cell, raw)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	t.Parallel()
	if err := Write(context.Background(), sample, testForm(t), "pdf", &bytes.Buffer{}, Options{}); err == nil || !strings.Contains(err.Error(), "csv, jsonl, xlsx") {
		t.Fatalf("err = %v", err)
	}
}
