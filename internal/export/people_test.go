package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Shanghai wherever the test runs

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/uploads/links"
	"github.com/xuri/excelize/v2"
)

func shanghai(t *testing.T) *time.Location {
	t.Helper()
	z, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// photoForm has a labelled file field, and its entry a photo.
func photoForm(t *testing.T) (*form.Form, rows, FileLister) {
	t.Helper()
	fs, err := form.Parse([]byte("id: f\nfields:\n  - {name: name, type: text, label: {en: Name, zh: 姓名}}\n  - {name: phone, type: phone, label: {en: Phone, zh: 手机号}}\n  - {name: photo, type: file, label: {en: Photo, zh: 照片}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	r := rows{{Seq: 1, ID: "sub_1", Form: "f", Key: "k1", Status: "stored", ReceivedAt: time.Date(2027, 3, 1, 9, 0, 7, 123456000, time.UTC),
		Data: json.RawMessage(`{"name":"=1+1","phone":"+8613800138000","photo":"upload:p1","_uploads":["p1"]}`)},
		{Seq: 2, ID: "sub_2", Form: "f", Key: "k2", Status: "waitlisted", ReceivedAt: time.Date(2027, 3, 1, 17, 30, 0, 0, time.UTC), Data: json.RawMessage(`{"name":"Li"}`)}}
	files := func(_ context.Context, id string) (map[string][]links.File, error) {
		return map[string][]links.File{"photo": {{Name: "me.jpg", Type: "image/jpeg", Size: 3, SHA256: "ab", URL: "https://forms.example.org/v1/files/sub_1/p1?exp=1&sig=x"}}}, nil
	}
	return fs[0], r, files
}

// TestPeopleCSV: an export for people heads its columns in the chosen
// language, says statuses in words, gives times in the organizer's zone
// to the second, files as name and absolute link, starts with a BOM, and
// still defuses formulas.
func TestPeopleCSV(t *testing.T) {
	t.Parallel()
	f, r, files := photoForm(t)
	tests := []struct {
		lang  string
		head  []string
		first []string
	}{
		{"zh", []string{"编号", "状态", "提交时间 (Asia/Shanghai)", "姓名", "手机号", "照片", "其他内容"},
			[]string{"sub_1", "已收到", "2027-03-01 17:00:07", "'=1+1", "'+8613800138000", "me.jpg https://forms.example.org/v1/files/sub_1/p1?exp=1&sig=x", ""}},
		{"en", []string{"Entry", "Status", "Received (Asia/Shanghai)", "Name", "Phone", "Photo", "Other fields"},
			[]string{"sub_1", "Received", "2027-03-01 17:00:07", "'=1+1", "'+8613800138000", "me.jpg https://forms.example.org/v1/files/sub_1/p1?exp=1&sig=x", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.lang, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(context.Background(), r, f, "csv", &buf, Options{People: true, Lang: tc.lang, Zone: shanghai(t), Files: files}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !strings.HasPrefix(out, BOM) {
				t.Fatalf("no UTF-8 BOM: %q", out[:min(len(out), 12)])
			}
			recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, BOM))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(recs[0], "|") != strings.Join(tc.head, "|") {
				t.Errorf("header %q, want %q", recs[0], tc.head)
			}
			if strings.Join(recs[1], "|") != strings.Join(tc.first, "|") {
				t.Errorf("row %q, want %q", recs[1], tc.first)
			}
			if want := "2027-03-02 01:30:00"; recs[2][2] != want {
				t.Errorf("the second entry's time %q, want %q (the next day in Shanghai)", recs[2][2], want)
			}
			if w := map[string]string{"zh": "候补", "en": "Waitlisted"}[tc.lang]; recs[2][1] != w {
				t.Errorf("waitlisted in words: %q, want %q", recs[2][1], w)
			}
		})
	}
	// Without a zone, UTC, named.
	var buf bytes.Buffer
	if err := Write(context.Background(), r, f, "csv", &buf, Options{People: true, Lang: "zh"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"提交时间 (UTC)"`) || !strings.Contains(buf.String(), `"2027-03-01 09:00:07"`) {
		t.Errorf("without a zone: %s", buf.String())
	}
}

// TestMachineFormatsUnchanged pins the machine formats: the CSV without
// People and JSON Lines (with People or not) are byte for byte what they
// were before exports for people existed.
func TestMachineFormatsUnchanged(t *testing.T) {
	t.Parallel()
	f, r, files := photoForm(t)
	var csvOut, jsonl, jsonlPeople bytes.Buffer
	if err := Write(context.Background(), r, f, "csv", &csvOut, Options{Files: files}); err != nil {
		t.Fatal(err)
	}
	wantCSV := "\"id\",\"key\",\"status\",\"received_at\",\"name\",\"phone\",\"photo\",\"extra\"\r\n" +
		"\"sub_1\",\"k1\",\"stored\",\"2027-03-01T09:00:07.123456Z\",\"'=1+1\",\"'+8613800138000\",\"{\"\"name\"\":\"\"me.jpg\"\",\"\"type\"\":\"\"image/jpeg\"\",\"\"size\"\":3,\"\"sha256\"\":\"\"ab\"\",\"\"url\"\":\"\"https://forms.example.org/v1/files/sub_1/p1?exp=1&sig=x\"\"}\",\"\"\r\n" +
		"\"sub_2\",\"k2\",\"waitlisted\",\"2027-03-01T17:30:00.000000Z\",\"Li\",\"\",\"\",\"\"\r\n"
	if csvOut.String() != wantCSV {
		t.Errorf("machine CSV changed:\n%s\nwant\n%s", csvOut.String(), wantCSV)
	}
	for _, c := range []struct {
		buf  *bytes.Buffer
		opts Options
	}{{&jsonl, Options{Files: files}}, {&jsonlPeople, Options{Files: files, People: true, Lang: "zh", Zone: shanghai(t)}}} {
		if err := Write(context.Background(), r, f, "jsonl", c.buf, c.opts); err != nil {
			t.Fatal(err)
		}
	}
	wantJSONL := `{"id":"sub_1","form":"f","key":"k1","status":"stored","received_at":"2027-03-01T09:00:07.123456Z","data":{"name":"=1+1","phone":"+8613800138000","photo":{"name":"me.jpg","type":"image/jpeg","size":3,"sha256":"ab","url":"https://forms.example.org/v1/files/sub_1/p1?exp=1\u0026sig=x"}}}` + "\n" +
		`{"id":"sub_2","form":"f","key":"k2","status":"waitlisted","received_at":"2027-03-01T17:30:00.000000Z","data":{"name":"Li"}}` + "\n"
	if jsonl.String() != wantJSONL || jsonlPeople.String() != wantJSONL {
		t.Errorf("JSON Lines changed:\n%s\n%s\nwant\n%s", jsonl.String(), jsonlPeople.String(), wantJSONL)
	}
}

// TestPeopleXLSX: the same headings and words, the time a typed cell of
// the zone's wall clock, the formula a text cell without an apostrophe.
func TestPeopleXLSX(t *testing.T) {
	t.Parallel()
	f, r, files := photoForm(t)
	var buf bytes.Buffer
	if err := Write(context.Background(), r, f, "xlsx", &buf, Options{People: true, Lang: "zh", Zone: shanghai(t), Files: files}); err != nil {
		t.Fatal(err)
	}
	x, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "编号|状态|提交时间 (Asia/Shanghai)|姓名|手机号|照片|其他内容"; strings.Join(got[0], "|") != want {
		t.Errorf("header %q, want %q", got[0], want)
	}
	if want := "sub_1|已收到|2027-03-01 17:00:07|=1+1|+8613800138000|me.jpg https://forms.example.org/v1/files/sub_1/p1?exp=1&sig=x"; strings.Join(got[1], "|") != want {
		t.Errorf("row %q, want %q", got[1], want)
	}
	if typ, _ := x.GetCellType("Sheet1", "D2"); typ == excelize.CellTypeFormula {
		t.Error("a formula cell")
	}
	if fm, _ := x.GetCellFormula("Sheet1", "D2"); fm != "" {
		t.Errorf("D2 has a formula %q", fm)
	}
}
