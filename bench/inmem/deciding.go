package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/store"
)

// deciding is what formd's intake (internal/intake) takes as its journal
// and its outcomes: an Append that decides in memory, appends the decided
// record to formd's SQLite journal (group commit, fsync) and hands the
// outcome to the waiting request once the record is durable; an Outcome
// read from the journal's record. So the prototype runs formd's own
// intake — decoding, validation, keyed hashes, the answers — and differs
// from formd only in where the decision is made.
type deciding struct {
	j     *sqlitejournal.Journal
	s     *state
	waits *processor.Notifier
	log   *slog.Logger
}

var errAsync = errors.New("the study decides sync forms only")

// Append decides e and appends its record; for a key journaled (or being
// journaled) already it reports that first entry, as the journal does.
func (d *deciding) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	if !sync {
		return journal.Appended{}, errAsync
	}
	for {
		v, err := d.s.decide(e)
		if err != nil {
			return journal.Appended{}, fmt.Errorf("decide %s/%s: %w: %w", e.Form, e.Key, journal.ErrUnavailable, err)
		}
		switch {
		case v.known:
			first, found, err := d.j.Lookup(ctx, e.Form, e.Key)
			if err != nil {
				return journal.Appended{}, err
			}
			if !found {
				return journal.Appended{}, fmt.Errorf("look up %s/%s: %w", e.Form, e.Key, errDiverged)
			}
			return journal.Appended{Entry: first, Duplicate: true}, nil
		case v.pending != nil:
			// The key's first send is being appended: wait for it, so that
			// this send is answered as it (or, if it failed, decided anew).
			v.wait = v.pending.done
		}
		if v.wait != nil {
			select {
			case <-v.wait:
				continue
			case <-ctx.Done():
				return journal.Appended{}, ctx.Err()
			}
		}
		return d.append(ctx, v.d)
	}
}

// append appends a decided record and settles the decision by what the
// journal answered. The append is not cancelled with the request: the
// state must learn whether the record went in.
func (d *deciding) append(ctx context.Context, dec *decision) (journal.Appended, error) {
	a, err := d.j.Append(context.WithoutCancel(ctx), dec.entry, true)
	switch {
	case err == nil && !a.Duplicate:
		d.s.durable(dec, a.Entry.Seq)
		d.waits.Publish(outcomeOf(a.Entry, dec.outcome, false))
		return a, nil
	case err == nil:
		// The journal has the key and the state did not: it was not
		// rebuilt from this journal.
		d.s.abort(dec)
		d.log.Error("the journal has a key the state does not", "form", dec.entry.Form, "err", errDiverged)
		return a, nil
	case errors.Is(err, journal.ErrOverloaded) || errors.Is(err, journal.ErrClosed):
		d.s.abort(dec) // refused before the writer took it
		return a, err
	}
	// The commit failed: the record may be in or not.
	first, found, lerr := d.j.Lookup(context.WithoutCancel(ctx), dec.entry.Form, dec.entry.Key)
	switch {
	case lerr != nil:
		d.s.lose(dec)
		d.log.Error("append failed and its fate is unknown; restart to rebuild from the journal", "err", errors.Join(err, lerr))
	case found && first.ID == dec.entry.ID:
		d.s.durable(dec, first.Seq)
	default:
		d.s.abort(dec)
	}
	return a, err // the client sends again with the same key
}

// Lookup finds the journal's entry for (form, key).
func (d *deciding) Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error) {
	return d.j.Lookup(ctx, form, key)
}

// Outcome reads the outcome a record carries; none while it is appended
// (the request then waits for it, as formd's intake does).
func (d *deciding) Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error) {
	if d.s.pendingKey(form, key) {
		return store.Outcome{}, false, nil
	}
	e, found, err := d.j.Lookup(ctx, form, key)
	if err != nil || !found {
		return store.Outcome{}, false, err
	}
	dec, ok := decisionOf(e.Data)
	if !ok {
		return store.Outcome{}, false, fmt.Errorf("record %d: no %s: %w", e.Seq, decisionKey, errDiverged)
	}
	return outcomeOf(e, dec, true), true, nil
}

// outcomeOf is the outcome formd's intake answers for a record.
func outcomeOf(e journal.Entry, dec string, replayed bool) store.Outcome {
	o := store.Outcome{ID: e.ID, Form: e.Form, Key: e.Key, ReceivedAt: e.ReceivedAt, Fingerprint: e.Fingerprint, Replayed: replayed}
	switch dec {
	case decStored:
		o.Decision = store.StatusStored
	case decRejected:
		o.Decision = store.StatusRejected
	case decSpam:
		o.Decision = store.StatusSpam
	case decSameAs:
		o.Decision = store.StatusDuplicate
		o.SameAs = &store.Original{Decision: store.StatusStored}
	default:
		o.Decision = store.StatusDuplicate
	}
	o.Status = o.Decision
	return o
}
