package uploads

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// expireBatch is how many expired uploads one RunOnce deletes.
const expireBatch = 100

// RunOnce deletes the uploads no entry claimed whose expiry has passed,
// and the uploads of entries whose data was erased (retention, forget):
// for each, one transaction removes the record and queues the deletion of
// the bytes (a claim decided meanwhile keeps an unclaimed upload, see
// store.UploadHolds.ExpireUpload), and then the queued bytes are deleted.
// A stop between the two leaves the deletion queued for the next pass,
// never bytes that no record names. A deletion that fails is recorded in
// the store (store.UploadDeletions.DeletionFailed) and tried again by the
// next pass, after those not tried yet; RunOnce goes on with the others
// and returns the failures at the end. It returns how many expired and
// erased uploads it found; a full batch means there may be more.
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
	n, _, err := s.runOnce(ctx)
	return n, err
}

// runOnce is RunOnce, saying also how many queued deletions it did.
func (s *Service) runOnce(ctx context.Context) (found, deleted int, err error) {
	cutoff, err := s.expiryCutoff(ctx)
	if err != nil {
		return 0, 0, err
	}
	ids, err := s.st.ExpiredUploads(ctx, cutoff, expireBatch)
	if err != nil {
		return 0, 0, fmt.Errorf("expire uploads: %w", err)
	}
	for _, id := range ids {
		// Only if still expired: a claim may have been decided since it
		// was listed.
		if _, err := s.st.ExpireUpload(ctx, id, cutoff); err != nil {
			return found, 0, fmt.Errorf("expire upload %s: %w", id, err)
		}
		found++
	}
	// The files of entries whose data was erased go with it. Their links
	// stopped working when the erasure committed (download checks
	// store.Upload.Erased); here the claim and the record go, with the
	// deletion of the bytes queued.
	erased, err := s.st.ErasedUploads(ctx, expireBatch)
	if err != nil {
		return found, 0, fmt.Errorf("erase uploads: %w", err)
	}
	for _, id := range erased {
		if _, err := s.st.DropErasedUpload(ctx, id); err != nil {
			return found, 0, fmt.Errorf("erase upload %s: %w", id, err)
		}
		found++
	}
	deleted, err = s.deleteQueued(ctx)
	if err != nil {
		return found, deleted, err
	}
	swept, err := s.sweepPosted(ctx, cutoff)
	return found + swept, deleted, err
}

// deleteQueued deletes the bytes of the queued deletions, one batch.
func (s *Service) deleteQueued(ctx context.Context) (int, error) {
	ds, err := s.st.PendingDeletions(ctx, expireBatch)
	if err != nil {
		return 0, fmt.Errorf("delete upload bytes: %w", err)
	}
	n := 0
	var failed []error
	for _, d := range ds {
		if err := s.removeBytes(ctx, d.ID); err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			failed = append(failed, fmt.Errorf("delete upload %s's bytes: %w", d.ID, err))
			if rerr := s.st.DeletionFailed(ctx, d.ID, err.Error(), s.cfg.Now()); rerr != nil {
				return n, fmt.Errorf("record the failed deletion of upload %s: %w", d.ID, rerr)
			}
			continue
		}
		if err := s.st.DeletionDone(ctx, d.ID); err != nil {
			return n, fmt.Errorf("delete upload %s's bytes: %w", d.ID, err)
		}
		n++
	}
	if len(failed) > 0 {
		return n, fmt.Errorf("%d of %d upload deletions failed, to be tried again at the next pass: %w", len(failed), len(ds), errors.Join(failed...))
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
			found, deleted, err := s.runOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Logger.Warn("expire uploads", "err", err)
				}
				break
			}
			if found < expireBatch && deleted < expireBatch {
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
