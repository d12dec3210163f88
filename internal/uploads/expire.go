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

// RunOnce deletes the uploads no entry claimed whose expiry has passed:
// the record first (a claim decided meanwhile keeps it, see
// store.Uploads.DeleteUpload), then the bytes; and the uploads of
// entries whose data was erased. It returns how many it deleted; a full
// batch means there may be more.
func (s *Service) RunOnce(ctx context.Context) (int, error) {
	ids, err := s.st.ExpiredUploads(ctx, s.cfg.Now(), expireBatch)
	if err != nil {
		return 0, fmt.Errorf("expire uploads: %w", err)
	}
	n := 0
	for _, id := range ids {
		// Only if still expired: a submission may have held it since it
		// was listed (Check).
		gone, err := s.st.ExpireUpload(ctx, id, s.cfg.Now())
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
		case !s.hasBytes(ctx, u.ID):
			// A record without its bytes: a restore puts back the uploads
			// entries claimed, not those still unclaimed when the backup
			// was taken (issue 30). The client uploads the file again.
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-not-found", Message: "names an upload whose bytes are not here (the data was restored from a backup): upload the file again"})
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

// hasBytes says a complete upload's bytes are here, on the embedded tier
// (a bucket's objects are not in backups: they are not looked for).
func (s *Service) hasBytes(ctx context.Context, id string) bool {
	d, ok := s.objs.(*Dir)
	if !ok {
		return true
	}
	o, err := d.Open(ctx, id)
	if err != nil {
		return !errors.Is(err, errNoObject)
	}
	o.Close()
	return true
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
