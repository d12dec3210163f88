package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// reviewOne is POST …/entries/{id}/approve and …/decline: a pending entry
// of a form with review is decided, once (409 entry-not-pending, nothing
// changed, for an entry decided already).
func (h *Handler) reviewOne(approve bool) func(http.ResponseWriter, *http.Request, call) error {
	return func(w http.ResponseWriter, r *http.Request, c call) error {
		id := r.PathValue("id")
		promoted, err := h.Review(r.Context(), c.p, c.form, id, approve)
		if err != nil {
			return err
		}
		key := "declined"
		if approve {
			key = "approved"
		}
		return writeJSON(w, http.StatusOK, map[string]any{key: id, "promoted": nonNil(promoted)})
	}
}

// reviewRequest is the body of POST …/review: the entries to approve and
// to decline, at most maxReview in all.
type reviewRequest struct {
	Approve []string `json:"approve"`
	Decline []string `json:"decline"`
}

const maxReview = 500

// reviewResult is one entry's outcome in a bulk review: "approved",
// "declined", or the problem code it got (entry-not-pending,
// entry-not-found).
type reviewResult struct {
	ID       string   `json:"id"`
	Result   string   `json:"result"`
	Promoted []string `json:"promoted,omitempty"`
}

// reviewMany is POST …/review: many entries approved or declined, each in
// its own transaction and each once; the answer lists every entry's
// result, so that a bulk review that meets entries another editor
// decided says which.
func (h *Handler) reviewMany(w http.ResponseWriter, r *http.Request, c call) error {
	var req reviewRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		return problem.New(problem.CodeInvalidRequest, "the body could not be read")
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `the body must be {"approve": [ids], "decline": [ids]}`)
	}
	if n := len(req.Approve) + len(req.Decline); n == 0 || n > maxReview {
		return problem.New(problem.CodeInvalidRequest, "list from 1 to 500 entries under approve and decline")
	}
	var out []reviewResult
	for _, batch := range []struct {
		ids     []string
		approve bool
		done    string
	}{{req.Approve, true, "approved"}, {req.Decline, false, "declined"}} {
		for _, id := range batch.ids {
			promoted, err := h.Review(r.Context(), c.p, c.form, id, batch.approve)
			res := reviewResult{ID: id, Result: batch.done, Promoted: promoted}
			switch {
			case errors.Is(err, store.ErrNotPending):
				res.Result = problem.CodeEntryNotPending
			case errors.Is(err, store.ErrNotFound):
				res.Result = problem.CodeEntryNotFound
			case err != nil:
				return err
			}
			out = append(out, res)
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"results": out})
}
