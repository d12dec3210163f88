package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/export"
)

// ---- audit log ----

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, p page) error {
	f := accounts.AuditFilter{Form: r.URL.Query().Get("form"), Limit: 100}
	var err error
	if f.Before, err = admin.ParseAuditCursor(r.URL.Query().Get("before")); err != nil {
		return err
	}
	if f.Form != "" {
		fm, err := h.adm.Authorize(p.P, f.Form, accounts.Read)
		if err != nil {
			return err
		}
		f.Sites = []string{fm.Def.Site}
	}
	list, err := h.adm.Accounts.Audit(r.Context(), p.P, f)
	if err != nil {
		return err
	}
	next := ""
	if len(list) == f.Limit {
		nq := url.Values{"before": {strconv.FormatInt(list[len(list)-1].ID, 10)}}
		if f.Form != "" {
			nq.Set("form", f.Form)
		}
		next = "/admin/audit?" + nq.Encode()
	}
	p.Nav, p.Title = "audit", p.L.T["nav.audit"]
	p.Data = map[string]any{"Entries": list, "Next": next, "Form": f.Form}
	h.render(w, http.StatusOK, "audit", p)
	return nil
}

// decodeData is an entry's values by field name: the form's fields and
// the extra fields it does not define, each as JSON. Erased data (null)
// is no values; data that is not a JSON object is shown whole, under
// dataUnreadable, rather than as an entry with no values.
// dataUnreadable names the whole of an entry's data when it cannot be read
// as values by field.
const dataUnreadable = "(data)"

func decodeData(raw []byte) map[string]json.RawMessage {
	data, extra := export.SplitExtra(raw)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil && len(data) > 0 {
		m = map[string]json.RawMessage{dataUnreadable: json.RawMessage(strconv.Quote(string(data)))}
	}
	if len(extra) > 0 {
		var ex map[string]json.RawMessage
		if json.Unmarshal(extra, &ex) == nil {
			if m == nil {
				m = map[string]json.RawMessage{}
			}
			for k, v := range ex {
				m[k] = v
			}
		}
	}
	return m
}

// valueText is a value as one cell of text, as exports write it.
func valueText(raw json.RawMessage) string { return export.CellText(raw) }
