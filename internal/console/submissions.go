package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// ---- submissions ----

// column is a column the submissions table may show.
type column struct {
	Name, Label string
	Shown       bool
}

// submissionsView is the submissions page.
type submissionsView struct {
	Form     *form.Form
	Sel      admin.Selection
	Page     admin.EntryPage
	Columns  []column
	Cells    [][]string // per row, the shown fields' values
	Statuses []string
	Status   string
	Query    url.Values // the selection, with the columns chosen
	// Next is the next page's URL ("" on the last); Export the export
	// URL of each format, for the selection shown.
	Next      string
	Export    map[string]string
	Searched  bool
	ShownCols int
	// Drafts counts the form's saved drafts (never their values);
	// Erasures are participants' pending erasure requests.
	Drafts   store.DraftCounts
	Erasures []store.ErasureRequest
	// Pending are the ids of the page's pending entries when the form
	// has review and the editor may decide them: the table is then the
	// bulk review's form (review.go).
	Pending []string
}

func (h *Handler) submissions(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sel, err := h.adm.ParseSelection(f, q)
	if err != nil {
		return err
	}
	pg, err := h.adm.Submissions(r.Context(), f, sel)
	if err != nil {
		return err
	}
	v := submissionsView{Form: f, Sel: sel, Page: pg, Statuses: admin.Statuses, Searched: pg.Searched}
	if len(sel.Statuses) == 1 {
		v.Status = sel.Statuses[0]
	}
	chosen := q["col"]
	for i, fd := range f.Fields() {
		label := fd.Label.For(p.L.Tag)
		if label == "" {
			label = fd.Name
		}
		shown := slices.Contains(chosen, fd.Name) || len(chosen) == 0 && i < 4
		if shown {
			v.ShownCols++
		}
		v.Columns = append(v.Columns, column{Name: fd.Name, Label: label, Shown: shown})
	}
	for _, c := range removedColumns(f, pg.Rows, chosen, p.L.Tag) {
		if c.Shown {
			v.ShownCols++
		}
		v.Columns = append(v.Columns, c)
	}
	canReview := f.Def.Review && p.P.Can(accounts.Act, f.Def.Site)
	for _, row := range pg.Rows {
		if canReview && row.Status == store.StatusPending {
			v.Pending = append(v.Pending, row.ID)
		}
		vals := rowValues(row)
		var cells []string
		for _, c := range v.Columns {
			if c.Shown {
				cells = append(cells, fileCell(f, c.Name, vals[c.Name], p.L))
			}
		}
		if len(row.Data) == 0 && len(cells) > 0 {
			cells[0] = p.L.T["sub.erased"]
		}
		v.Cells = append(v.Cells, cells)
	}
	sq := sel.Values()
	for _, c := range chosen {
		sq.Add("col", c)
	}
	v.Query = sq
	if pg.Next != (store.Cursor{}) {
		nq := url.Values{}
		for k, vs := range sq {
			nq[k] = vs
		}
		nq.Set("before", strconv.FormatUint(pg.Next.Seq, 10)+":"+pg.Next.ID)
		v.Next = "/admin/forms/" + url.PathEscape(f.ID()) + "/submissions?" + nq.Encode()
	}
	v.Export = map[string]string{}
	for _, format := range []string{"csv", "xlsx", "jsonl"} {
		ex := sel.Values()
		ex.Set("format", format)
		ex.Set("header", "labels")
		ex.Set("lang", p.L.Tag)
		if format != "jsonl" {
			// For people (issue 34); console.js adds the browser's
			// time zone (tz) and the chosen link validity (link_ttl).
			ex.Set("for", "people")
			ex.Set("link_ttl", "7d")
		}
		v.Export[format] = "/v1/admin/forms/" + url.PathEscape(f.ID()) + "/export?" + ex.Encode()
	}
	counts, err := h.adm.Store.DraftCounts(r.Context())
	if err != nil {
		return err
	}
	for _, d := range counts {
		if d.Form == f.ID() {
			v.Drafts = d
		}
	}
	if v.Erasures, err = h.adm.PendingErasures(r.Context(), p.P, f.ID()); err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "submissions", p)
	return nil
}

// rowValues are an entry's values as text, by field name.
func rowValues(r store.Row) map[string]string {
	out := map[string]string{}
	for k, raw := range decodeData(r.Data) {
		out[k] = valueText(raw)
	}
	return out
}

// ShownLabels are the labels of the shown columns, in order: on a phone
// each cell of an entry's card is named by its column's label.
func (v submissionsView) ShownLabels() []string {
	var out []string
	for _, c := range v.Columns {
		if c.Shown {
			out = append(out, c.Label)
		}
	}
	return out
}

// fileCell is a cell of a file field as the number of its files, not
// the internal upload:<id> references (issue 34); the entry's page
// names and links them. Other cells are as they are.
func fileCell(f *form.Form, name, text string, l lang) string {
	fd, ok := f.Field(name)
	if !ok || fd.Type != form.TypeFile || text == "" {
		return text
	}
	return fmt.Sprintf(l.T["sub.files"], strings.Count(text, "upload:"))
}
