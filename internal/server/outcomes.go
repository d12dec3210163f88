package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

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
// outcomes about them: one announcement a waiting instance, on its own
// subject. Outcomes nobody waits for, or waited for here (the processor
// woke those), are not announced.
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
			data, err := json.Marshal(outs)
			if err == nil {
				err = bus.PublishOutcomes(instance, data)
			}
			if err != nil {
				s.log.Warn("outcomes not announced; the waiting instance will find them by polling", "instance", instance, "err", err)
			}
		}
	}
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
