package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/store"
)

// newInstanceID names this start of the instance: 64 random bits, so
// that no two starts of a deployment share one (a restart is a new
// instance: its predecessor's waiting requests died with it).
func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// waitingInstance is the id entries name as their waiter: this instance's
// on a journal that announces outcomes, empty on one that does not (one
// instance: the processor here wakes its requests itself).
func (s *Server) waitingInstance() string {
	if _, ok := s.Journal.(journal.OutcomeBus); ok {
		return s.Instance
	}
	return ""
}

// announcer tells the instances whose requests wait for a settled batch's
// outcomes about them: on each waiting instance's own subject, in as few
// announcements as the bus's payload limit allows (a batch of a thousand
// outcomes is more than NATS's 1 MB, and one announcement over it would be
// refused whole). Outcomes nobody waits for, or waited for here (the
// processor woke those), are not announced.
func (s *Server) announcer(bus journal.OutcomeBus) func([]journal.Entry, []store.Outcome) {
	return func(entries []journal.Entry, outs []store.Outcome) {
		var by map[string][]store.Outcome
		for i, e := range entries {
			if e.Waiter == "" || e.Waiter == s.Instance || i >= len(outs) {
				continue
			}
			if by == nil {
				by = map[string][]store.Outcome{}
			}
			by[e.Waiter] = append(by[e.Waiter], outs[i])
		}
		for instance, outs := range by {
			chunks, skipped, err := announcements(outs, bus.MaxAnnouncement())
			for _, data := range chunks {
				if err != nil {
					break
				}
				err = bus.PublishOutcomes(instance, data)
			}
			if err != nil {
				s.log.Warn("outcomes not announced; the waiting instance will find them by polling", "instance", instance, "err", err)
			}
			if skipped > 0 {
				s.log.Warn("outcomes larger than an announcement not announced; the waiting instance will find them by polling", "instance", instance, "outcomes", skipped)
			}
		}
	}
}

// announcements encodes outs, in order, as JSON arrays (what
// listenForOutcomes reads) of at most limit bytes each. An outcome that
// alone is larger than limit is left out and counted in skipped: its
// waiter finds it by polling the store, as when an announcement is lost.
func announcements(outs []store.Outcome, limit int) (chunks [][]byte, skipped int, err error) {
	var cur []byte
	for _, o := range outs {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, 0, fmt.Errorf("encode an outcome: %w", err)
		}
		if len(b)+2 > limit {
			skipped++
			continue
		}
		// cur is "[a,b" while open: the next needs a comma and the closing bracket.
		if cur != nil && len(cur)+1+len(b)+1 > limit {
			chunks = append(chunks, append(cur, ']'))
			cur = nil
		}
		if cur == nil {
			cur = append([]byte{'['}, b...)
		} else {
			cur = append(append(cur, ','), b...)
		}
	}
	if cur != nil {
		chunks = append(chunks, append(cur, ']'))
	}
	return chunks, skipped, nil
}

// listenForOutcomes feeds the outcomes announced to this instance, decided
// on others, to its waiting requests until ctx ends.
func (s *Server) listenForOutcomes(ctx context.Context, bus journal.OutcomeBus) {
	stop, err := bus.SubscribeOutcomes(s.Instance, func(data []byte) {
		var outs []store.Outcome
		if err := json.Unmarshal(data, &outs); err != nil {
			s.log.Warn("unreadable outcome announcement", "err", err)
			return
		}
		for _, o := range outs {
			s.notify.Publish(o)
		}
	})
	if err != nil {
		s.log.Warn("not listening for outcomes decided on other instances; waiting requests are answered by the poll of the store", "err", err)
		return
	}
	<-ctx.Done()
	stop()
}

// pollOutcomes is the instance's one poll of the store for all its waiting
// requests (processor.Notifier.Poll), at --poll-outcomes while
// announcements do not come and backing off to ten times that while they
// do.
func (s *Server) pollOutcomes(ctx context.Context) {
	read := func(ctx context.Context, keys []store.Key) ([]store.Outcome, error) {
		if r, ok := s.Store.(store.OutcomesReader); ok {
			return r.Outcomes(ctx, keys)
		}
		var outs []store.Outcome
		for _, k := range keys {
			o, found, err := s.Store.Outcome(ctx, k.Form, k.Key)
			if err != nil {
				return outs, err
			}
			if found {
				outs = append(outs, o)
			}
		}
		return outs, nil
	}
	s.notify.Poll(ctx, read, processor.PollOptions{Every: s.cfg.PollOutcomes, Logger: s.log})
}
