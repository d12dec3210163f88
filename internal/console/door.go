package console

import (
	"crypto/rand"
	"errors"
	"net/http"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// doorView is the door page: the counts, the form to type a code, and
// the answer to the last scan.
type doorView struct {
	Form   *form.Form
	Roster admin.Roster
	Door   string
	// Key is the next scan's idempotency key: made when the page is
	// shown, so that the same form posted again (a reload, a double
	// tap) is the same scan and gets its first answer.
	Key    string
	Answer *doorAnswer
}

// doorAnswer is what the door page says of a scan, in large type: Kind
// is ok (checked in), again (already checked in) or bad (not valid).
type doorAnswer struct {
	Kind string
	// Who is the entry's name and option, as the door says them.
	Who  string
	Door string
	At   string
	// Why is the words key of a refusal (door.why.*).
	Why string
}

func newScanKey() string { return "door-" + rand.Text() }

// doorPage is GET /admin/forms/{form}/door: check people in by typing
// their short code (a plain form, no JavaScript needed).
func (h *Handler) doorPage(w http.ResponseWriter, r *http.Request, p page) error {
	return h.showDoor(w, r, p, r.URL.Query().Get("door"), nil)
}

func (h *Handler) showDoor(w http.ResponseWriter, r *http.Request, p page, door string, a *doorAnswer) error {
	f, err := h.formOf(r, p, accounts.CheckIn)
	if err != nil {
		return err
	}
	if !f.Def.Checkin {
		return problem.New(problem.CodeNotFound, "this form has no check-in")
	}
	ro, err := h.adm.RosterOf(r.Context(), f)
	if err != nil {
		return err
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Data = doorView{Form: f, Roster: ro, Door: door, Key: newScanKey(), Answer: a}
	h.render(w, http.StatusOK, "door", p)
	return nil
}

// doorScan is POST /admin/forms/{form}/door: one scan, answered on the
// page in large type and colour.
func (h *Handler) doorScan(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.CheckIn)
	if err != nil {
		return err
	}
	door := r.PostFormValue("door")
	key := r.PostFormValue("key")
	if key == "" {
		key = newScanKey()
	}
	res, _, err := h.adm.CheckIn(r.Context(), p.P, f, key, admin.ScanRequest{Ticket: r.PostFormValue("ticket"), Door: door})
	var a doorAnswer
	var pr *problem.Problem
	switch {
	case errors.As(err, &pr) && pr.Code == problem.CodeTicketInvalid:
		a = doorAnswer{Kind: "bad", Why: "door.why." + pr.Reason}
	case errors.As(err, &pr) && pr.Code == problem.CodeTicketNotValidNow:
		a = doorAnswer{Kind: "bad", Why: "status." + pr.EntryStatus}
	case err != nil:
		return err
	default:
		who := res.Name
		if res.Option != "" {
			who += ", " + res.Option
		}
		a = doorAnswer{Kind: "ok", Who: who, Door: res.Door, At: res.CheckedInAt.In(organizerZone(r.PostFormValue("tz"), p.L)).Format("15:04")}
		if res.Result != "checked_in" {
			a.Kind = "again"
		}
	}
	return h.showDoor(w, r, p, door, &a)
}
