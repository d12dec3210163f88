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
	"github.com/xuri/excelize/v2"
)

// checkinRows is a form with check-in and two entries: one checked in at
// door B, one not.
func checkinRows(t *testing.T, checkin bool) (*form.Form, rows) {
	t.Helper()
	src := "id: gala\nfields:\n  - {name: name, type: text, label: {en: Name, zh: 姓名}}\n"
	if checkin {
		src = "checkin: true\n" + src
	}
	fs, err := form.Parse([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	return fs[0], rows{
		{Seq: 1, ID: "sub_1", Form: "gala", Key: "k1", Status: "stored", ReceivedAt: time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC),
			Data: json.RawMessage(`{"name":"Ann"}`), CheckedInAt: time.Date(2027, 3, 8, 2, 2, 3, 456789000, time.UTC), Door: "B"},
		{Seq: 2, ID: "sub_2", Form: "gala", Key: "k2", Status: "stored", ReceivedAt: time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC),
			Data: json.RawMessage(`{"name":"Li"}`)},
	}
}

func export(t *testing.T, f *form.Form, r rows, format string, opts Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(context.Background(), r, f, format, &buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func csvRecords(t *testing.T, b []byte) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(b), BOM))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestCheckinColumns: on a form with check-in, every format carries each
// entry's check-in time and door, empty for an entry not checked in; the
// export for people heads them in its language and gives the time in its
// zone.
func TestCheckinColumns(t *testing.T) {
	t.Parallel()
	f, r := checkinRows(t, true)

	recs := csvRecords(t, export(t, f, r, "csv", Options{}))
	want := [][]string{
		{"id", "key", "status", "received_at", "checked_in_at", "door", "name", "extra"},
		{"sub_1", "k1", "stored", "2027-03-01T09:00:00.000000Z", "2027-03-08T02:02:03.456789Z", "B", "Ann", ""},
		{"sub_2", "k2", "stored", "2027-03-01T10:00:00.000000Z", "", "", "Li", ""},
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("machine CSV row %d: %q, want %q", i, recs[i], want[i])
		}
	}

	for lang, head := range map[string]string{
		"zh": "编号|状态|提交时间 (Asia/Shanghai)|签到时间 (Asia/Shanghai)|签到入口|姓名|其他内容",
		"en": "Entry|Status|Received (Asia/Shanghai)|Checked in (Asia/Shanghai)|Door|Name|Other fields",
	} {
		recs := csvRecords(t, export(t, f, r, "csv", Options{People: true, Lang: lang, Zone: shanghai(t)}))
		if strings.Join(recs[0], "|") != head {
			t.Errorf("%s header %q, want %q", lang, recs[0], head)
		}
		if got := strings.Join(recs[1][3:5], "|") + "/" + strings.Join(recs[2][3:5], "|"); got != "2027-03-08 10:02:03|B/|" {
			t.Errorf("%s check-in cells %q, want the Shanghai time and door B, then empty", lang, got)
		}
	}

	x, err := excelize.OpenReader(bytes.NewReader(export(t, f, r, "xlsx", Options{People: true, Lang: "zh", Zone: shanghai(t)})))
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "编号|状态|提交时间 (Asia/Shanghai)|签到时间 (Asia/Shanghai)|签到入口|姓名"; strings.Join(got[0][:6], "|") != want {
		t.Errorf("XLSX header %q, want %q", got[0], want)
	}
	if want := "sub_1|已收到|2027-03-01 17:00:00|2027-03-08 10:02:03|B|Ann"; strings.Join(got[1], "|") != want {
		t.Errorf("XLSX row %q, want %q", got[1], want)
	}
	if want := "sub_2|已收到|2027-03-01 18:00:00|||Li"; strings.Join(got[2], "|") != want {
		t.Errorf("XLSX row %q, want %q", got[2], want)
	}
	if typ, _ := x.GetCellType("Sheet1", "D2"); typ == excelize.CellTypeSharedString || typ == excelize.CellTypeInlineString {
		t.Errorf("the check-in time is a text cell (%v), want a time", typ)
	}

	lines := strings.Split(strings.TrimSpace(string(export(t, f, r, "jsonl", Options{}))), "\n")
	if !strings.Contains(lines[0], `"checked_in_at":"2027-03-08T02:02:03.456789Z","door":"B"`) {
		t.Errorf("JSON Lines, checked in: %s", lines[0])
	}
	if strings.Contains(lines[1], "checked_in_at") || strings.Contains(lines[1], "door") {
		t.Errorf("JSON Lines, not checked in: %s, want no check-in", lines[1])
	}
}

// TestNoCheckinColumnsWithoutCheckin: a form without check-in has no
// such columns, whatever its rows say.
func TestNoCheckinColumnsWithoutCheckin(t *testing.T) {
	t.Parallel()
	f, r := checkinRows(t, false)
	for _, format := range []string{"csv", "jsonl"} {
		if out := string(export(t, f, r, format, Options{})); strings.Contains(out, "checked_in_at") || strings.Contains(out, `"B"`) {
			t.Errorf("%s without check-in: %s", format, out)
		}
	}
}
