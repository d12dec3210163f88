package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/sqlitedb"
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

// scanJournal rebuilds the state after position after by reading only
// what the state needs — key, claims, fingerprint and the decision at
// the head of the data — in one query over the journal's file, rather
// than through journal.Read, which decodes every column of every record a
// page at a time. It reads sqlitejournal's table directly: a product
// version would be a method of sqlitejournal.
func scanJournal(ctx context.Context, path string, s *state, after uint64) (int64, error) {
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT seq, form, key, claims, fingerprint, substr(data, 1, 40) FROM journal_entries WHERE seq > ? ORDER BY seq`, after)
	if err != nil {
		return 0, fmt.Errorf("scan journal: %w", err)
	}
	defer rows.Close()
	var (
		n      int64
		e      journal.Entry
		claims string
		fp     []byte
		head   []byte
	)
	for rows.Next() {
		if err := rows.Scan(&e.Seq, &e.Form, &e.Key, &claims, &fp, &head); err != nil {
			return n, fmt.Errorf("scan journal: %w", err)
		}
		e.Claims = e.Claims[:0]
		if claims != "" {
			e.Claims = strings.Split(claims, ",")
		}
		copy(e.Fingerprint[:], fp)
		e.Data = head
		if err := s.apply(e); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("scan journal: %w", err)
	}
	return n, nil
}
