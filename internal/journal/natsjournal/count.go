package natsjournal

import (
	"context"
	"fmt"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go/jetstream"
)

var _ journal.FormCounter = (*Journal)(nil)

// CountForm counts a form's entries with two short-lived consumers
// filtered on the form's subjects: one from the start of the stream, one
// from above the shared consumer's acknowledgement floor. Pending is at
// most the true number: entries above the floor acknowledged out of order
// count too.
func (j *Journal) CountForm(ctx context.Context, form string) (journal.FormCount, error) {
	ci, err := j.cons.Info(ctx)
	if err != nil {
		return journal.FormCount{}, fmt.Errorf("count journal entries: %w: %w", journal.ErrUnavailable, err)
	}
	entries, err := j.countFrom(ctx, form, 0)
	if err != nil {
		return journal.FormCount{}, err
	}
	pending, err := j.countFrom(ctx, form, ci.AckFloor.Stream+1)
	if err != nil {
		return journal.FormCount{}, err
	}
	return journal.FormCount{Entries: entries, Pending: pending}, nil
}

// countFrom counts the form's messages from a stream sequence (0: all).
func (j *Journal) countFrom(ctx context.Context, form string, seq uint64) (int64, error) {
	cfg := jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     j.filterSubject(form),
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
	}
	if seq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq
	}
	cons, err := j.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("count journal entries: %w: %w", journal.ErrUnavailable, err)
	}
	n := cons.CachedInfo().NumPending
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = j.stream.DeleteConsumer(dctx, cons.CachedInfo().Name) // the inactive threshold removes it otherwise
	return int64(n), nil
}
