package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
)

// recovery says how the state was rebuilt and what it cost.
type recovery struct {
	fromSnapshot  bool
	snapshotLoad  time.Duration
	tail          int64
	tailReplay    time.Duration
	snapshotError error // a snapshot that could not be used
}

func (r recovery) String() string {
	if r.fromSnapshot {
		return fmt.Sprintf("snapshot read in %s, then %d records of the journal in %s", r.snapshotLoad.Round(time.Millisecond), r.tail, r.tailReplay.Round(time.Millisecond))
	}
	s := fmt.Sprintf("%d records of the journal in %s", r.tail, r.tailReplay.Round(time.Millisecond))
	if r.snapshotError != nil {
		s += " (snapshot not used: " + r.snapshotError.Error() + ")"
	}
	return s
}

// recoverState rebuilds the state: from the snapshot at snapPath, when
// there is a usable one, and the journal's records after it; else from
// the whole journal.
func recoverState(ctx context.Context, j *sqlitejournal.Journal, snapPath string, capacity int64) (*state, recovery, error) {
	var rec recovery
	var s *state
	if snapPath != "" {
		t := time.Now()
		loaded, err := readSnapshot(snapPath, capacity)
		switch {
		case err == nil:
			s, rec.fromSnapshot, rec.snapshotLoad = loaded, true, time.Since(t)
		case !errors.Is(err, fs.ErrNotExist):
			rec.snapshotError = err
		}
	}
	if s == nil {
		st, err := j.Stats(ctx)
		if err != nil {
			return nil, rec, err
		}
		s = newState(capacity, int(st.LastSeq))
	}
	t := time.Now()
	err := j.Read(ctx, journal.Filter{AfterSeq: s.last}, func(e journal.Entry) error {
		rec.tail++
		return s.apply(e)
	})
	rec.tailReplay = time.Since(t)
	if err != nil {
		return nil, rec, fmt.Errorf("rebuild the state from the journal: %w", err)
	}
	return s, rec, nil
}
