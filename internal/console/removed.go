package console

import (
	"slices"
	"sort"

	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// removedColumns are the table's columns of fields the form no longer has
// that the page's entries hold values of (export.AddRemoved), headed as
// the exports head them. They are shown unless the owner chose columns:
// a value the store holds is not hidden because a definition changed.
func removedColumns(f *form.Form, rows []store.Row, chosen []string, lang string) []column {
	var names []string
	for _, r := range rows {
		names = export.AddRemoved(f, r.Data, names)
	}
	cols := make([]column, 0, len(names))
	for _, n := range names {
		cols = append(cols, column{Name: n, Label: export.RemovedHeading(n, lang), Shown: len(chosen) == 0 || slices.Contains(chosen, n)})
	}
	return cols
}

// otherValues are an entry's values beyond today's fields, for the entry
// page: the fields the form no longer has, in the data's order and headed
// as removed, then the extra fields it never defined, by name. vals are
// the entry's values with today's fields taken out.
func otherValues(f *form.Form, r store.Row, vals map[string]string, lang string) []fieldValue {
	var out []fieldValue
	for _, n := range export.AddRemoved(f, r.Data, nil) {
		if v, ok := vals[n]; ok {
			out = append(out, fieldValue{export.RemovedHeading(n, lang), v})
			delete(vals, n)
		}
	}
	rest := make([]string, 0, len(vals))
	for k := range vals {
		if k == form.UploadsKey { // formd's own list; the files are shown apart
			continue
		}
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, fieldValue{k, vals[k]})
	}
	return out
}
