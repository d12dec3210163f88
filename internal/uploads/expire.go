package uploads

import (
	"context"
	"fmt"
	"time"
)

// expireBatch is how many expired uploads one RunOnce deletes.
const expireBatch = 100

// RunOnce deletes the uploads no entry claimed whose expiry has passed:
// the record first (a claim decided meanwhile keeps it, see
// store.Uploads.DeleteUpload), then the bytes; and the uploads of
// entries whose data was erased. It returns how many it deleted; a full
// batch means there may be more.
//
// An upload a journaled, undecided entry names must not go before its
// decision (DESIGN invariant 12: intake no longer holds it in the store
// before the journal). The decision claims an upload that had not expired
// when its entry was received; so the pass deletes only uploads that
// expired before the oldest undecided entry of the journal was received
// (journal.Stats.OldestPending), and none while it cannot read the
// journal's backlog. With one embedded journal per instance on a shared
// store, another instance's backlog is not seen: an upload its entry
// names may then be gone, and that entry is decided upload-not-found.
func (s *Service) RunOnce(ctx context.Context) (int, error) {
	cutoff, err := s.expiryCutoff(ctx)
	if err != nil {
		return 0, err
	}
	ids, err := s.st.ExpiredUploads(ctx, cutoff, expireBatch)
	if err != nil {
		return 0, fmt.Errorf("expire uploads: %w", err)
	}
	n := 0
	for _, id := range ids {
		// Only if still expired: a claim may have been decided since it
		// was listed.
		gone, err := s.st.ExpireUpload(ctx, id, cutoff)
		if err != nil {
			return n, fmt.Errorf("expire upload %s: %w", id, err)
		}
		if gone {
			if err := s.removeBytes(ctx, id); err != nil {
				return n, fmt.Errorf("expire upload %s: %w", id, err)
			}
		}
		n++
	}
	// The files of entries whose data was erased (retention, forget) go
	// with it: the bytes first, then the claim and the record, so that a
	// stop in between leaves a record that the next pass finishes.
	erased, err := s.st.ErasedUploads(ctx, expireBatch)
	if err != nil {
		return n, fmt.Errorf("erase uploads: %w", err)
	}
	for _, id := range erased {
		if err := s.removeBytes(ctx, id); err != nil {
			return n, fmt.Errorf("erase upload %s: %w", id, err)
		}
		if _, err := s.st.DropErasedUpload(ctx, id); err != nil {
			return n, fmt.Errorf("erase upload %s: %w", id, err)
		}
		n++
	}
	return n, nil
}

// expiryCutoff is the time before which an unclaimed upload's expiry lets
// the pass delete it: now, or the time the oldest undecided entry was
// received, if earlier.
func (s *Service) expiryCutoff(ctx context.Context) (time.Time, error) {
	now := s.cfg.Now()
	if s.cfg.Backlog == nil {
		return now, nil
	}
	st, err := s.cfg.Backlog.Stats(ctx)
	if err != nil {
		return now, fmt.Errorf("expire uploads: read the journal's backlog: %w", err)
	}
	if st.Backlog > 0 && !st.OldestPending.IsZero() && st.OldestPending.Before(now) {
		return st.OldestPending, nil
	}
	return now, nil
}

// Run expires uploads every interval until ctx ends; errors are logged
// and tried again at the next tick.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			n, err := s.RunOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Logger.Warn("expire uploads", "err", err)
				}
				break
			}
			if n < expireBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
