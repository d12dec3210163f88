package export

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// Fields a form no longer has. A definition applied again may drop a field
// (phone, tickets) that older entries hold values of; the store keeps
// those values, so an export must too. Where the columns of "every field
// the form ever had" come from is the entries themselves: the names their
// data holds that today's definition lacks. Not a record of past
// definitions, because:
//
//   - the entries are the truth of what there is to export: a record of
//     definitions lists fields nobody filled in, and cannot list the
//     values of entries stored before the record began (the very data
//     that was hidden before this change, already in every store);
//   - it needs no new table, nothing PutForms must keep in step, and
//     nothing to migrate.
//
// The price is one more pass over the entries before the header row (an
// export streams, so its columns must be known first); the pass decodes
// only the keys, in constant memory. An entry stored between the two
// passes with a name the first did not see keeps it under extra, so no
// value is dropped either way.

// RemovedHeading is the heading of a removed field's column: its name,
// marked removed in lang (Chinese for zh and zh-*, else English).
func RemovedHeading(name, lang string) string {
	if lang == "zh" || strings.HasPrefix(lang, "zh-") {
		return name + "（已删除）"
	}
	return name + " (removed)"
}

// AddRemoved appends to names, in order of first appearance, the keys of
// an entry's data that name no field of f (a field the form had when the
// entry was stored): not the extra fields (form.ExtraKey, exported under
// extra) nor formd's own lists of uploads and of ignored fields (which
// the export keeps under extra).
func AddRemoved(f *form.Form, data json.RawMessage, names []string) []string {
	if len(data) == 0 || data[0] != '{' {
		return names
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return names
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return names
		}
		k, _ := t.(string)
		if k == form.ExtraKey || k == form.UploadsKey || k == form.IgnoredKey {
			continue
		}
		if _, ok := f.Field(k); !ok && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	return names
}

// removedFields reads every entry rows streams for the names of removed
// fields they hold.
func removedFields(ctx context.Context, rows func(context.Context, func(store.Row) error) error, f *form.Form) ([]string, error) {
	var names []string
	err := rows(ctx, func(r store.Row) error {
		names = AddRemoved(f, r.Data, names)
		return nil
	})
	return names, err
}

// leftover is extra with every value of m that no column took (a name
// the first pass did not see) merged in, so that nothing is dropped.
func leftover(f *form.Form, removed []string, m map[string]json.RawMessage, extra json.RawMessage) (json.RawMessage, error) {
	var left map[string]json.RawMessage
	for k, v := range m {
		if _, ok := f.Field(k); ok || slices.Contains(removed, k) || k == form.UploadsKey {
			continue
		}
		if left == nil {
			left = map[string]json.RawMessage{}
		}
		left[k] = v
	}
	if left == nil {
		return extra, nil
	}
	if len(extra) > 0 {
		var ex map[string]json.RawMessage
		if err := json.Unmarshal(extra, &ex); err == nil {
			for k, v := range ex {
				if _, dup := left[k]; !dup {
					left[k] = v
				}
			}
		}
	}
	return json.Marshal(left)
}
