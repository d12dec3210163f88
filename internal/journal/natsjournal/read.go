package natsjournal

import (
	"context"
	"fmt"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go/jetstream"
)

// Read calls fn for every entry matching f, in journal order. The stream
// filters by subject (the form); the site and the time window are checked
// here, and
// the server starts reading a quarter hour before Since so that clocks of
// instances and servers may differ that much.
func (j *Journal) Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error {
	cfg := jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     j.filterSubject(f.Form),
		InactiveThreshold: 10 * time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
	}
	switch {
	case f.AfterSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, f.AfterSeq+1
	case !f.Since.IsZero():
		start := f.Since.Add(-15 * time.Minute)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	cons, err := j.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = j.stream.DeleteConsumer(dctx, name) // the inactive threshold removes it otherwise
	}()
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		b, err := cons.Fetch(int(min(pending, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
		}
		n := 0
		for m := range b.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("read journal: %w", err)
			}
			pending = md.NumPending
			e, err := decode(md.Sequence.Stream, m.Data())
			if err != nil {
				return fmt.Errorf("read journal: %w", err)
			}
			if !matches(e, f) {
				continue
			}
			if err := fn(e); err != nil {
				for range b.Messages() {
				}
				return err
			}
		}
		if err := ignorable(b.Error()); err != nil {
			return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
		}
		if n == 0 {
			return fmt.Errorf("read journal: the server sent nothing with %d entries to go: %w", pending, journal.ErrUnavailable)
		}
	}
	return nil
}

func matches(e journal.Entry, f journal.Filter) bool {
	return (f.Form == "" || e.Form == f.Form) && (f.Site == "" || e.Site == f.Site) &&
		(f.Since.IsZero() || !e.ReceivedAt.Before(f.Since)) && (f.Until.IsZero() || e.ReceivedAt.Before(f.Until)) &&
		e.Seq > f.AfterSeq
}
