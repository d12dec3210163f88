package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/sqlitedb"
)

// The store as an ordered projection of the journal: one goroutine takes
// the journal's records in order (Fetch, the delivery formd's processor
// uses) and writes each batch in one transaction, with the position it
// reached, to a SQLite file with the unique indexes of formd's store. It
// decides nothing: a record that breaks a unique index means the state in
// memory and the journal disagreed, and stops the projection.

const storeSchema = `
CREATE TABLE IF NOT EXISTS entries (
	seq INTEGER PRIMARY KEY,
	id TEXT NOT NULL,
	form TEXT NOT NULL,
	site TEXT NOT NULL,
	key TEXT NOT NULL,
	status TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	fingerprint BLOB NOT NULL,
	claims TEXT NOT NULL,
	data BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_form_key ON entries(form, key);
CREATE UNIQUE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_form_status ON entries(form, status, seq);
CREATE INDEX IF NOT EXISTS entries_form_received ON entries(form, received_at);
CREATE TABLE IF NOT EXISTS claims (
	form TEXT NOT NULL,
	claim BLOB NOT NULL,
	seq INTEGER NOT NULL,
	PRIMARY KEY (form, claim)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS projection (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT OR IGNORE INTO projection(k, v) VALUES ('position', 0);
`

type projector struct {
	j                *sqlitejournal.Journal
	db               *sql.DB
	pos              atomic.Uint64 // the last position written
	ins, claim, mark *sql.Stmt
}

func openProjector(ctx context.Context, j *sqlitejournal.Journal, path string) (*projector, error) {
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	p := &projector{j: j, db: db}
	if _, err := db.ExecContext(ctx, storeSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create store: %w", err)
	}
	var pos uint64
	if err := db.QueryRowContext(ctx, `SELECT v FROM projection WHERE k = 'position'`).Scan(&pos); err != nil {
		db.Close()
		return nil, fmt.Errorf("read position: %w", err)
	}
	p.pos.Store(pos)
	for _, s := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&p.ins, `INSERT INTO entries(seq, id, form, site, key, status, received_at, fingerprint, claims, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&p.claim, `INSERT INTO claims(form, claim, seq) VALUES (?, ?, ?)`},
		{&p.mark, `UPDATE projection SET v = ? WHERE k = 'position'`},
	} {
		if *s.dst, err = db.PrepareContext(ctx, s.q); err != nil {
			db.Close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	return p, nil
}

// run projects until ctx ends or a batch fails.
func (p *projector) run(ctx context.Context) error {
	for {
		if err := p.runOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// runOnce waits for records and writes one batch of them.
func (p *projector) runOnce(ctx context.Context) error {
	es, err := p.j.Fetch(ctx, 2048)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	return p.write(ctx, es)
}

func (p *projector) write(ctx context.Context, es []journal.Entry) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("project: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	ins, claim := tx.StmtContext(ctx, p.ins), tx.StmtContext(ctx, p.claim)
	pos := p.pos.Load()
	seqs := make([]uint64, 0, len(es))
	for _, e := range es {
		seqs = append(seqs, e.Seq)
		if e.Seq <= pos {
			continue // written before a restart
		}
		if e.Seq != pos+1 {
			return fmt.Errorf("project: record %d after %d: %w", e.Seq, pos, errors.New("out of order"))
		}
		dec, ok := decisionOf(e.Data)
		if !ok {
			return fmt.Errorf("project: record %d: no %s", e.Seq, decisionKey)
		}
		if _, err := ins.ExecContext(ctx, e.Seq, e.ID, e.Form, e.Site, e.Key, dec, e.ReceivedAt.UnixMicro(), e.Fingerprint[:],
			strings.Join(e.Claims, ","), []byte(e.Data)); err != nil {
			return fmt.Errorf("project: record %d: %w: %w", e.Seq, errDiverged, err)
		}
		if dec == decStored {
			for _, c := range e.Claims {
				b := claimBytes(e.Form, c)
				if _, err := claim.ExecContext(ctx, e.Form, b[:], e.Seq); err != nil {
					return fmt.Errorf("project: record %d's claim: %w: %w", e.Seq, errDiverged, err)
				}
			}
		}
		pos = e.Seq
	}
	if _, err := tx.StmtContext(ctx, p.mark).ExecContext(ctx, pos); err != nil {
		return fmt.Errorf("project: position: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("project: commit: %w", err)
	}
	p.pos.Store(pos)
	return p.j.Ack(ctx, seqs...)
}

func (p *projector) close() error { return p.db.Close() }
