package natsjournal

import (
	"context"
	"errors"
	"fmt"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go/jetstream"
)

var _ journal.Forgetter = (*Journal)(nil)

// Forget deletes the entry of (form, key) from the stream, overwriting its
// data on the servers' disks (a secure delete), once the shared consumer
// has acknowledged it: every entry at or below its ack floor has its
// outcome in the store. The subject is then free, but the store keeps the
// key, so a retry of it is still answered as the first.
func (j *Journal) Forget(ctx context.Context, form, key string) error {
	e, found, err := j.Lookup(ctx, form, key)
	if err != nil || !found {
		return err
	}
	if e.Seq == 0 {
		return journal.ErrPending // an async append not yet in the stream
	}
	info, err := j.cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("forget journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	if e.Seq > info.AckFloor.Stream {
		return journal.ErrPending
	}
	if err := j.stream.SecureDeleteMsg(ctx, e.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("forget journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	return nil
}
