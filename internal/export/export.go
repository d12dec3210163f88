// Package export writes a form's entries as CSV, JSON Lines or XLSX,
// streaming from the store a page at a time so that memory stays constant
// whatever the number of entries.
package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
func Write(ctx context.Context, src Source, f *form.Form, format string, w io.Writer) error {
	switch format {
	case "csv":
		return writeCSV(ctx, src, f, w)
	case "jsonl":
		return writeJSONL(ctx, src, f, w)
	case "xlsx":
		return writeXLSX(ctx, src, f, w)
	}
	return fmt.Errorf("export format %q is not known; use one of %s", format, strings.Join(Formats, ", "))
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

func header(f *form.Form) []string {
	h := []string{"id", "key", "status", "received_at"}
	for _, fd := range f.Fields() {
		h = append(h, fd.Name)
	}
	return h
}

// cells turns a row into the cells of a table, in header order.
func cells(f *form.Form, r store.Row) ([]string, error) {
	var data map[string]json.RawMessage
	if len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return nil, fmt.Errorf("entry %s: data is not a JSON object: %w", r.ID, err)
		}
	}
	out := []string{r.ID, r.Key, r.Status, r.ReceivedAt.UTC().Format(timeFormat)}
	for _, fd := range f.Fields() {
		out = append(out, cell(data[fd.Name]))
	}
	return out, nil
}

func cell(raw json.RawMessage) string {
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

func writeCSV(ctx context.Context, src Source, f *form.Form, w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header(f)); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	err := src.Export(ctx, f.ID(), func(r store.Row) error {
		c, err := cells(f, r)
		if err != nil {
			return err
		}
		for i := range c {
			c[i] = Neutralize(c[i])
		}
		return cw.Write(c)
	})
	cw.Flush()
	if err != nil {
		return fmt.Errorf("export %s: %w", f.ID(), err)
	}
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

type jsonlRow struct {
	ID         string          `json:"id"`
	Form       string          `json:"form"`
	Key        string          `json:"key"`
	Status     string          `json:"status"`
	ReceivedAt string          `json:"received_at"`
	Data       json.RawMessage `json:"data"`
}

func writeJSONL(ctx context.Context, src Source, f *form.Form, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	err := src.Export(ctx, f.ID(), func(r store.Row) error {
		data := r.Data
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		return enc.Encode(jsonlRow{ID: r.ID, Form: r.Form, Key: r.Key, Status: r.Status,
			ReceivedAt: r.ReceivedAt.UTC().Format(timeFormat), Data: data})
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", f.ID(), err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write jsonl: %w", err)
	}
	return nil
}

// writeXLSX uses excelize's stream writer, which spills rows to a temporary
// file rather than holding the sheet in memory.
func writeXLSX(ctx context.Context, src Source, f *form.Form, w io.Writer) error {
	x := excelize.NewFile()
	defer x.Close()
	sw, err := x.NewStreamWriter("Sheet1")
	if err != nil {
		return fmt.Errorf("write xlsx: %w", err)
	}
	row := 1
	put := func(vals []string) error {
		cellsAny := make([]any, len(vals))
		for i, v := range vals {
			cellsAny[i] = Neutralize(v)
		}
		name, err := excelize.CoordinatesToCellName(1, row)
		if err != nil {
			return err
		}
		row++
		return sw.SetRow(name, cellsAny)
	}
	if err := put(header(f)); err != nil {
		return fmt.Errorf("write xlsx: %w", err)
	}
	err = src.Export(ctx, f.ID(), func(r store.Row) error {
		c, err := cells(f, r)
		if err != nil {
			return err
		}
		return put(c)
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", f.ID(), err)
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("write xlsx: %w", err)
	}
	if _, err := x.WriteTo(w); err != nil {
		return fmt.Errorf("write xlsx: %w", err)
	}
	return nil
}
