// Package export writes a form's entries as CSV, JSON Lines or XLSX,
// streaming from the store a page at a time so that memory stays constant
// whatever the number of entries.
//
// A spreadsheet must not run what a stranger typed: CSV cells that start
// like a formula get a leading apostrophe and every CSV cell is quoted (so
// a locale that splits on ';' cannot cut a cell into a formula); XLSX
// cells are typed — text is text, which a spreadsheet never evaluates,
// numbers numbers and times times — so they need no apostrophe and a
// phone number reads +8613800138000.
package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/xuri/excelize/v2"
)

// Formats is the list of formats Write accepts.
var Formats = []string{"csv", "jsonl", "xlsx"}

// Source streams a form's entries.
type Source interface {
	Export(ctx context.Context, form string, fn func(store.Row) error) error
}

// Options shape the table formats.
type Options struct {
	// Labels heads the field columns with the fields' labels (in Lang,
	// else the label's default) instead of their names.
	Labels bool
	Lang   string
	// Rows, when set, streams these entries instead of every entry of
	// the form (a console's filtered view).
	Rows func(ctx context.Context, fn func(store.Row) error) error
	// Files, when set, gives each file field's files as {name, type,
	// size, sha256, url}; without it a file field's value stays the
	// upload:<id> reference.
	Files FileLister
	// People makes the CSV and XLSX tables for people (people.go): the
	// labels and formd's own headings in Lang, statuses in words, times
	// in Zone to the second, files as name and link, a BOM before a CSV.
	// JSON Lines are the same either way.
	People bool
	// Zone is the time zone of an export for people (nil: UTC).
	Zone *time.Location
	// History, when set, adds to each JSON Lines row the versions the
	// participant's changes replaced (member history, oldest first);
	// the table formats do not carry it.
	History func(ctx context.Context, form, id string) ([]store.EntryVersion, error)
}

// ContentType is the media type of a format.
func ContentType(format string) string {
	switch format {
	case "csv":
		return "text/csv; charset=utf-8"
	case "jsonl":
		return "application/jsonl"
	case "xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	}
	return "application/octet-stream"
}

// Write exports the entries of f (its fields give the columns) to w.
func Write(ctx context.Context, src Source, f *form.Form, format string, w io.Writer, opts Options) error {
	rows := opts.Rows
	if rows == nil {
		rows = func(ctx context.Context, fn func(store.Row) error) error { return src.Export(ctx, f.ID(), fn) }
	}
	rows = withFiles(f, rows, opts.Files)
	var err error
	switch format {
	case "csv":
		err = writeCSV(ctx, rows, f, w, opts)
	case "jsonl":
		err = writeJSONL(ctx, rows, f.Def.Checkin, w, opts.History)
	case "xlsx":
		err = writeXLSX(ctx, rows, f, w, opts)
	default:
		return fmt.Errorf("export format %q is not known; use one of %s", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return fmt.Errorf("export %s as %s: %w", f.ID(), format, err)
	}
	return nil
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

// header is the row of column names: the entry's own columns, the
// fields, the fields the form no longer has (removed.go), then extra (the
// fields the form never defined, as JSON).
func header(f *form.Form, removed []string, opts Options) []string {
	h := []string{"id", "key", "status", "received_at"}
	if opts.People {
		h = []string{word(opts.Lang, "id"), word(opts.Lang, "status"), receivedHeading(opts)}
	}
	if f.Def.Checkin {
		if opts.People {
			h = append(h, word(opts.Lang, "checked_in_at")+" ("+opts.zone().String()+")", word(opts.Lang, "door"))
		} else {
			h = append(h, "checked_in_at", "door")
		}
	}
	for _, fd := range f.Fields() {
		name := fd.Name
		if opts.Labels || opts.People {
			if l := fd.Label.For(opts.Lang); l != "" {
				name = l
			}
		}
		h = append(h, name)
	}
	for _, name := range removed {
		h = append(h, RemovedHeading(name, opts.Lang))
	}
	if opts.People {
		return append(h, word(opts.Lang, "extra"))
	}
	return append(h, "extra")
}

// own is an entry's own cells (before the fields') as text: on a form
// with check-in, its check-in's time and door follow (empty when it is
// not checked in).
func own(f *form.Form, r store.Row, opts Options) []string {
	var cells []string
	if opts.People {
		cells = []string{r.ID, word(opts.Lang, r.Status), r.ReceivedAt.In(opts.zone()).Format(peopleTime)}
	} else {
		cells = []string{r.ID, r.Key, r.Status, r.ReceivedAt.UTC().Format(timeFormat)}
	}
	if !f.Def.Checkin {
		return cells
	}
	switch {
	case r.CheckedInAt.IsZero():
		return append(cells, "", "")
	case opts.People:
		return append(cells, r.CheckedInAt.In(opts.zone()).Format(peopleTime), r.Door)
	}
	return append(cells, r.CheckedInAt.UTC().Format(timeFormat), r.Door)
}

// cellText is a field's value as one cell of text.
func cellText(fd form.Field, raw json.RawMessage, opts Options) string {
	if opts.People && fd.Type == form.TypeFile {
		return filesText(raw)
	}
	return text(raw)
}

// SplitExtra separates an entry's data into the form's fields and the
// fields it does not define (form.ExtraKey), each a JSON object; extra is
// nil when there are none. Data that is not an object is returned as is.
func SplitExtra(data json.RawMessage) (fields, extra json.RawMessage) {
	if !bytes.Contains(data, []byte(`"`+form.ExtraKey+`"`)) {
		return data, nil
	}
	out, _, err := rewriteObject(data, func(k string, v json.RawMessage) (json.RawMessage, bool, error) {
		if k == form.ExtraKey {
			extra = v
			return nil, false, nil
		}
		return v, true, nil
	})
	if err != nil {
		return data, nil
	}
	return out, extra
}

// rewriteObject rebuilds the JSON object data member by member, in its
// own order (which a map would lose): keep gives the value to write for
// each member, or false to leave the member out. Data that is not an
// object comes back as it is, with object false.
func rewriteObject(data json.RawMessage, keep func(key string, v json.RawMessage) (json.RawMessage, bool, error)) (out json.RawMessage, object bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return data, false, nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, true, fmt.Errorf("read data: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, true, fmt.Errorf("read data: %w", err)
		}
		k, _ := t.(string)
		v, ok, err := keep(k, v)
		if err != nil {
			return nil, true, err
		}
		if !ok {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), true, nil
}

// values decodes an entry's data: the form's fields by name, and the
// extra fields as JSON.
func values(r store.Row) (map[string]json.RawMessage, json.RawMessage, error) {
	data, extra := SplitExtra(r.Data)
	var m map[string]json.RawMessage
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, nil, fmt.Errorf("entry %s: data is not a JSON object: %w", r.ID, err)
		}
	}
	return m, extra, nil
}

// CellText is a value as one cell of text, as the table formats write
// it (the console's table too).
func CellText(raw json.RawMessage) string { return text(raw) }

// text is a value as one cell of text.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var list []string
		if json.Unmarshal(raw, &list) == nil {
			return strings.Join(list, "; ")
		}
	}
	return string(raw)
}

// Neutralize defuses a spreadsheet formula: a cell that starts with
// = + - @ (or a tab or carriage return, which some programs skip) gets a
// leading apostrophe, so that opening the export cannot run what a
// submitter typed.
func Neutralize(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// csvRow writes one CSV record with every cell quoted: a cell such as
// `a;=cmd` stays one cell in a spreadsheet that splits on ';', where an
// unquoted one would become a second cell starting with '='.
func csvRow(w *bufio.Writer, cells []string) error {
	for i, c := range cells {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteByte('"')
		w.WriteString(strings.ReplaceAll(Neutralize(c), `"`, `""`))
		w.WriteByte('"')
	}
	_, err := w.WriteString("\r\n")
	return err
}

func writeCSV(ctx context.Context, rows func(context.Context, func(store.Row) error) error, f *form.Form, w io.Writer, opts Options) error {
	removed, err := removedFields(ctx, rows, f)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if opts.People {
		bw.WriteString(BOM)
	}
	if err := csvRow(bw, header(f, removed, opts)); err != nil {
		return err
	}
	fields := f.Fields()
	err = rows(ctx, func(r store.Row) error {
		m, extra, err := values(r)
		if err != nil {
			return err
		}
		cells := own(f, r, opts)
		for _, fd := range fields {
			cells = append(cells, cellText(fd, m[fd.Name], opts))
		}
		for _, name := range removed {
			cells = append(cells, text(m[name]))
		}
		if extra, err = leftover(f, removed, m, extra); err != nil {
			return err
		}
		return csvRow(bw, append(cells, string(extra)))
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

type jsonlRow struct {
	ID         string          `json:"id"`
	Form       string          `json:"form"`
	Key        string          `json:"key"`
	Status     string          `json:"status"`
	ReceivedAt string          `json:"received_at"`
	Data       json.RawMessage `json:"data"`
	// Extra holds the fields the form does not define.
	Extra json.RawMessage `json:"extra,omitempty"`
	// CheckedInAt and Door are the entry's check-in, on a form with
	// check-in only (absent when it is not checked in).
	CheckedInAt *string `json:"checked_in_at,omitempty"`
	Door        *string `json:"door,omitempty"`
	// History holds the versions the participant's changes replaced
	// (Options.History).
	History []jsonlVersion `json:"history,omitempty"`
}

// jsonlVersion is one earlier version of an entry's answers.
type jsonlVersion struct {
	Version    int             `json:"version"`
	Data       json.RawMessage `json:"data"`
	Place      string          `json:"place,omitempty"`
	ReplacedAt string          `json:"replaced_at"`
}

func writeJSONL(ctx context.Context, rows func(context.Context, func(store.Row) error) error, checkin bool, w io.Writer,
	history func(ctx context.Context, form, id string) ([]store.EntryVersion, error)) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	err := rows(ctx, func(r store.Row) error {
		data, extra := SplitExtra(r.Data)
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		row := jsonlRow{ID: r.ID, Form: r.Form, Key: r.Key, Status: r.Status,
			ReceivedAt: r.ReceivedAt.UTC().Format(timeFormat), Data: data, Extra: extra}
		if checkin && !r.CheckedInAt.IsZero() {
			at := r.CheckedInAt.UTC().Format(timeFormat)
			row.CheckedInAt, row.Door = &at, &r.Door
		}
		if history != nil {
			vs, err := history(ctx, r.Form, r.ID)
			if err != nil {
				return fmt.Errorf("read the history of %s: %w", r.ID, err)
			}
			for _, v := range vs {
				row.History = append(row.History, jsonlVersion{Version: v.Version, Data: v.Data, Place: v.Place,
					ReplacedAt: v.ReplacedAt.UTC().Format(timeFormat)})
			}
		}
		return enc.Encode(row)
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// writeXLSX uses excelize's stream writer, which spills rows to a temporary
// file rather than holding the sheet in memory. Cells are typed.
func writeXLSX(ctx context.Context, rows func(context.Context, func(store.Row) error) error, f *form.Form, w io.Writer, opts Options) error {
	x := excelize.NewFile()
	defer x.Close()
	sw, err := x.NewStreamWriter("Sheet1")
	if err != nil {
		return err
	}
	timeStyle, err := x.NewStyle(&excelize.Style{CustomNumFmt: ptr("yyyy-mm-dd hh:mm:ss")})
	if err != nil {
		return err
	}
	dateStyle, err := x.NewStyle(&excelize.Style{CustomNumFmt: ptr("yyyy-mm-dd")})
	if err != nil {
		return err
	}
	row := 1
	put := func(cells []any) error {
		name, err := excelize.CoordinatesToCellName(1, row)
		if err != nil {
			return err
		}
		row++
		return sw.SetRow(name, cells)
	}
	removed, err := removedFields(ctx, rows, f)
	if err != nil {
		return err
	}
	head := header(f, removed, opts)
	cells := make([]any, len(head))
	for i, h := range head {
		cells[i] = h
	}
	if err := put(cells); err != nil {
		return err
	}
	fields := f.Fields()
	err = rows(ctx, func(r store.Row) error {
		m, extra, err := values(r)
		if err != nil {
			return err
		}
		cells := []any{r.ID, r.Key, r.Status, excelize.Cell{StyleID: timeStyle, Value: r.ReceivedAt.UTC()}}
		if opts.People {
			cells = []any{r.ID, word(opts.Lang, r.Status), excelize.Cell{StyleID: timeStyle, Value: opts.wall(r.ReceivedAt)}}
		}
		if f.Def.Checkin {
			cells = append(cells, checkinCells(r, opts, timeStyle)...)
		}
		for _, fd := range fields {
			if opts.People && fd.Type == form.TypeFile {
				if s := filesText(m[fd.Name]); s != "" {
					cells = append(cells, s)
				} else {
					cells = append(cells, nil)
				}
				continue
			}
			cells = append(cells, typed(fd, m[fd.Name], dateStyle))
		}
		for _, name := range removed {
			// Its type went with its definition: its value as text.
			if s := text(m[name]); s != "" {
				cells = append(cells, s)
			} else {
				cells = append(cells, nil)
			}
		}
		if extra, err = leftover(f, removed, m, extra); err != nil {
			return err
		}
		return put(append(cells, string(extra)))
	})
	if err != nil {
		return err
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	_, err = x.WriteTo(w)
	return err
}

// checkinCells are an entry's check-in time (typed, a wall-clock time in
// the zone for people) and door as XLSX cells, empty when it is not
// checked in.
func checkinCells(r store.Row, opts Options, timeStyle int) []any {
	if r.CheckedInAt.IsZero() {
		return []any{nil, nil}
	}
	at := r.CheckedInAt.UTC()
	if opts.People {
		at = opts.wall(r.CheckedInAt)
	}
	return []any{excelize.Cell{StyleID: timeStyle, Value: at}, r.Door}
}

// wall is t as the wall-clock time of the options' zone, to the second,
// for an XLSX export for people: a spreadsheet's times have no zone of
// their own.
func (o Options) wall(t time.Time) time.Time {
	at := t.In(o.zone())
	return time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
}

// typed is a value as an XLSX cell of its field's type: a number a
// spreadsheet can sum (when a float holds it exactly), a date, a boolean,
// else text — which no spreadsheet evaluates as a formula.
func typed(fd form.Field, raw json.RawMessage, dateStyle int) any {
	s := text(raw)
	if s == "" {
		return nil
	}
	switch fd.Type {
	case form.TypeNumber:
		if digits := strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(s), "0"); len(digits) <= 15 {
			if n, err := strconv.ParseFloat(s, 64); err == nil {
				return n
			}
		}
	case form.TypeDate:
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return excelize.Cell{StyleID: dateStyle, Value: d}
		}
	case form.TypeCheckbox:
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
