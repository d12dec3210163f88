package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
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
// to decline, at most MaxReview in all (the console's bulk review too).
type reviewRequest struct {
	Approve []string `json:"approve"`
	Decline []string `json:"decline"`
}

// MaxReview is the most entries one bulk review decides.
const MaxReview = 500

// ReviewResult is one entry's outcome in a bulk review: "approved",
// "declined", or the problem code it got (entry-not-pending,
// entry-not-found).
type ReviewResult struct {
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
	if n := len(req.Approve) + len(req.Decline); n == 0 || n > MaxReview {
		return problem.New(problem.CodeInvalidRequest, "list from 1 to 500 entries under approve and decline")
	}
	out, err := h.ReviewMany(r.Context(), c.p, c.form, req.Approve, req.Decline)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

// ReviewMany approves and declines many entries, each through Review (its
// own transaction, decided once, audited); an entry decided already or
// not found is that entry's result, not an error of the batch. It
// returns one result per id, approvals first, in the order given.
func (h *Handler) ReviewMany(ctx context.Context, p accounts.Principal, f *form.Form, approve, decline []string) ([]ReviewResult, error) {
	var out []ReviewResult
	for _, batch := range []struct {
		ids     []string
		approve bool
		done    string
	}{{approve, true, "approved"}, {decline, false, "declined"}} {
		for _, id := range batch.ids {
			promoted, err := h.Review(ctx, p, f, id, batch.approve)
			res := ReviewResult{ID: id, Result: batch.done, Promoted: promoted}
			switch {
			case errors.Is(err, store.ErrNotPending):
				res.Result = problem.CodeEntryNotPending
			case errors.Is(err, store.ErrNotFound):
				res.Result = problem.CodeEntryNotFound
			case err != nil:
				return out, err
			}
			out = append(out, res)
		}
	}
	return out, nil
}
