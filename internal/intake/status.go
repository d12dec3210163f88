package intake

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/journal"
)

// JournalLookup finds a journal entry by key.
type JournalLookup interface {
	Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error)
}

// Statuses reads the public status of keys: the store's outcome, or
// processing while the entry is only in the journal. The status endpoint
// answers from it, and so does the hosted result page (package hosted),
// which is why it stands apart from the Handler: the hosted pages need
// it, and the Handler needs the hosted pages.
type Statuses struct {
	journal  JournalLookup
	outcomes Outcomes
}

// NewStatuses reads statuses from the store's outcomes and the journal.
func NewStatuses(j JournalLookup, o Outcomes) Statuses {
	return Statuses{journal: j, outcomes: o}
}

// Status reports the public status of (form, key); found is false when
// neither the store nor the journal knows the key.
func (s Statuses) Status(ctx context.Context, formID, key string) (status string, found bool, err error) {
	doc, found, err := s.lookup(ctx, formID, key)
	return doc.status, found, err
}

// statusAnswer is the status of a key as the status document shows it.
type statusAnswer struct {
	status string
	body   []byte
}

// lookup reads the status of (form, key) with its status document.
func (s Statuses) lookup(ctx context.Context, formID, key string) (statusAnswer, bool, error) {
	o, ok, err := s.outcomes.Outcome(ctx, formID, key)
	if err != nil {
		return statusAnswer{}, false, fmt.Errorf("read the outcome of %s/%s: %w", formID, key, err)
	}
	if ok {
		st := publicStatus(o)
		return statusAnswer{status: st, body: currentDoc(o)}, true, nil
	}
	e, ok, err := s.journal.Lookup(ctx, formID, key)
	if err != nil {
		return statusAnswer{}, false, fmt.Errorf("look up %s/%s in the journal: %w", formID, key, err)
	}
	if !ok {
		return statusAnswer{}, false, nil
	}
	return statusAnswer{status: statusProcessing, body: statusDoc(e.ID, e.Form, e.Key, statusProcessing, e.ReceivedAt, e.Fingerprint)}, true, nil
}
