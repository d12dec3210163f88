package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/problem"
)

// Drafts are a participant's answers typed so far, saved under the key
// their submission will carry (DESIGN §4 "Drafts"). The rules every driver
// keeps, pinned by storetest:
//
//   - a draft is saved by one committed store write before the save is
//     answered, and numbered: version 1 at its creation, one more at each
//     save; a save names the version it read (If-Match) and a stale one
//     changes nothing (ErrDraftStale, with the current version);
//   - it is read and written only with its resume token, kept as a hash:
//     an unknown token and an expired draft are the same ErrDraftNotFound;
//   - a key already decided has no draft: saving or reading under it is
//     ErrDraftSubmitted, naming the entry's status; the decision of the
//     key's submission deletes the key's draft in its own transaction;
//   - drafts take no place and no participant claim and write no event,
//     so they never count for capacity or uniqueness and are never
//     delivered;
//   - ExpireDrafts (retention) and EraseDrafts (forget, after
//     FindDrafts) delete them.
type Drafts interface {
	// SaveDraft creates (p.Version 0) or replaces (p.Version, the version
	// the writer read) the draft of (p.Form, p.Key) and returns it.
	SaveDraft(ctx context.Context, p DraftSave) (Draft, error)
	// Draft reads the draft of (form, key) that the token hash opens; key
	// "" finds it by the token alone (a resume link).
	Draft(ctx context.Context, form, key string, tokenHash []byte, now time.Time) (Draft, error)
	// ExpireDrafts deletes up to limit drafts that expired at or before
	// now, and says how many.
	ExpireDrafts(ctx context.Context, now time.Time, limit int) (int, error)
	// FindDrafts lists up to limit drafts, of any form, whose data holds
	// one of the needles (as FindEntries matches them).
	FindDrafts(ctx context.Context, needles [][]byte, limit int) ([]DraftRef, error)
	// EraseDrafts deletes these drafts and says how many were there.
	EraseDrafts(ctx context.Context, refs []DraftRef) (int, error)
}

// DraftSave is one save of a draft.
type DraftSave struct {
	Form, Site, Key string
	// TokenHash is the hash of the resume token: the new token's at the
	// creation, the presented one's at a later save.
	TokenHash []byte
	// Version is the version the writer read; 0 creates the draft.
	Version int64
	Data    json.RawMessage
	Now     time.Time
	// TTL is how long the draft is kept after this save (draft_ttl).
	TTL time.Duration
}

// DraftRef names one draft.
type DraftRef struct{ Form, Key, Site string }

// Draft is a saved draft.
type Draft struct {
	Form, Key string
	Version   int64
	Data      json.RawMessage
	SavedAt   time.Time
	ExpiresAt time.Time
}

// Errors of drafts; each names its problem code.
var (
	// ErrDraftNotFound means no live draft of the key opens with this
	// token: none saved, expired, erased, or another token.
	ErrDraftNotFound error = problem.Sentinel("draft not found", problem.CodeDraftNotFound)
	// ErrDraftExists means a creation met a live draft of the key: its
	// later saves must carry its resume token.
	ErrDraftExists error = problem.Sentinel("a draft of this key exists", problem.CodeDraftExists)
	// ErrDraftStale is the sentinel of a StaleDraftError.
	ErrDraftStale error = problem.Sentinel("draft version mismatch", problem.CodeDraftStale)
	// ErrDraftSubmitted is the sentinel of a SubmittedDraftError.
	ErrDraftSubmitted error = problem.Sentinel("the key of this draft was submitted", problem.CodeDraftSubmitted)
)

// StaleDraftError is a save that named a version other than the current
// one: nothing changed.
type StaleDraftError struct{ Current int64 }

func (e *StaleDraftError) Error() string {
	return fmt.Sprintf("draft version mismatch: the current version is %d", e.Current)
}

// Unwrap is ErrDraftStale.
func (e *StaleDraftError) Unwrap() error { return ErrDraftStale }

// SubmittedDraftError is a draft's key that already has an entry, with
// the entry's status now.
type SubmittedDraftError struct{ Status string }

func (e *SubmittedDraftError) Error() string {
	return fmt.Sprintf("this key was submitted already (status %s)", e.Status)
}

// Unwrap is ErrDraftSubmitted.
func (e *SubmittedDraftError) Unwrap() error { return ErrDraftSubmitted }

// AsStaleDraft and AsSubmittedDraft find the typed errors in a chain.
func AsStaleDraft(err error) (*StaleDraftError, bool) { return errors.AsType[*StaleDraftError](err) }

// AsSubmittedDraft finds a SubmittedDraftError in err's chain.
func AsSubmittedDraft(err error) (*SubmittedDraftError, bool) {
	return errors.AsType[*SubmittedDraftError](err)
}
