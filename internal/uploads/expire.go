package uploads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// expireBatch is how many expired uploads one RunOnce deletes.
const expireBatch = 100

// RunOnce deletes the uploads no entry claimed whose expiry has passed,
// and the uploads of entries whose data was erased (retention, forget):
// for each, one transaction removes the record and queues the deletion of
// the bytes (a claim or a hold committed meanwhile keeps an unclaimed
// upload, see store.UploadHolds.ExpireUpload), and then the queued bytes
// are deleted. A stop between the two leaves the deletion queued for the
// next pass, never bytes that no record names. A deletion that fails is
// recorded in the store (store.UploadDeletions.DeletionFailed) and tried
// again by the next pass, after those not tried yet; RunOnce goes on with
// the others and returns the failures at the end. It returns how many
// expired and erased uploads it found (as before the queue: those whose
// bytes it deleted are among them); a full batch means there may be more.
func (s *Service) RunOnce(ctx context.Context) (int, error) {
	n, _, err := s.runOnce(ctx)
	return n, err
}

// runOnce is RunOnce, saying also how many queued deletions it did.
func (s *Service) runOnce(ctx context.Context) (found, deleted int, err error) {
	ids, err := s.st.ExpiredUploads(ctx, s.cfg.Now(), expireBatch)
	if err != nil {
		return 0, 0, fmt.Errorf("expire uploads: %w", err)
	}
	for _, id := range ids {
		// Only if still expired: a submission may have held it since it
		// was listed (Check).
		if _, err := s.st.ExpireUpload(ctx, id, s.cfg.Now()); err != nil {
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
	return found, deleted, err
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

// Check is the validation of the uploads a submission names: each must be
// a complete upload of this form and field, not claimed by an entry yet.
// It returns one field error per upload that is not. An upload whose
// bytes are all on disk but whose completion was not recorded (formd
// stopped in between) is completed here.
func (s *Service) Check(ctx context.Context, f *form.Form, refs []form.UploadRef) ([]form.FieldError, error) {
	var errs []form.FieldError
	for _, ref := range refs {
		u, err := s.st.Upload(ctx, ref.ID)
		if err == nil && !u.Complete && u.Form == f.ID() && u.Field == ref.Field {
			u, err = s.completeIfWritten(ctx, u)
		}
		var rej *rejection
		inf, infected := refusedUpload(err)
		switch {
		case errors.As(err, &rej):
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "file-rejected", Message: rej.problem().Detail})
		case infected:
			errs = append(errs, form.FieldError{Field: ref.Field, Code: problem.CodeFileInfected, Message: inf.problem().Detail})
		case errors.Is(err, store.ErrUploadNotFound) || err == nil && (u.Form != f.ID() || u.Field != ref.Field):
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-not-found", Message: "names no upload of this field (it may have expired): upload the file again"})
		case err != nil:
			return nil, err
		case !u.Complete:
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-incomplete", Message: "names an upload whose bytes have not all arrived: finish the upload first"})
		case u.Entry != "":
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-already-used", Message: "names an upload another submission has: upload the file again"})
		}
	}
	if len(errs) > 0 {
		return errs, nil
	}
	// The submission will be acknowledged: its uploads are held for as
	// long again as an upload is kept, so that its decision, however late
	// the processor comes to it, still finds them. An upload expired and
	// deleted meanwhile is not found, and the submission is refused now
	// rather than acknowledged and then decided upload-missing.
	until := s.cfg.Now().Add(s.cfg.Expiry)
	for _, ref := range refs {
		held, err := s.st.HoldUpload(ctx, ref.ID, until)
		if err != nil {
			return nil, err
		}
		if !held {
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-not-found", Message: "names no upload of this field (it may have expired): upload the file again"})
		}
	}
	return errs, nil
}

// completeIfWritten completes an upload whose bytes are all there.
func (s *Service) completeIfWritten(ctx context.Context, u store.Upload) (store.Upload, error) {
	up, err := s.core.GetUpload(ctx, u.ID)
	if errors.Is(err, ErrStorageUnavailable) || errors.Is(err, ErrStorageFull) {
		return u, err // the bucket holding the parts failed
	}
	if err != nil {
		return u, nil // no bytes yet: incomplete
	}
	info, err := up.GetInfo(ctx)
	if err != nil || info.Offset != u.Size {
		return u, nil
	}
	return s.complete(ctx, u.ID)
}
