package sqlitejournal

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/journal"
)

var _ journal.FormCounter = (*Journal)(nil)

// CountForm counts a form's entries, those queued for the writer
// included, and those not yet acknowledged: queued, past the delivery
// cursor (read from the end of the file, where the backlog is), or in
// flight.
func (j *Journal) CountForm(ctx context.Context, form string) (journal.FormCount, error) {
	var c journal.FormCount
	var queued int64
	j.queuedMu.Lock()
	for k := range j.queued {
		if k.form == form {
			queued++
		}
	}
	j.queuedMu.Unlock()
	cursor, inflight := j.delivery.formInFlight(form)
	c.Pending = inflight
	var entries, ahead int64
	if err := j.rdb.QueryRowContext(ctx, `SELECT count(*) FROM journal_entries WHERE form = ?`, form).Scan(&entries); err != nil {
		return c, fmt.Errorf("count journal entries: %w: %w", journal.ErrUnavailable, err)
	}
	// "+form" keeps the planner on the primary key: the range past the
	// cursor is the backlog, small, where the form's index is not.
	if err := j.rdb.QueryRowContext(ctx, `SELECT count(*) FROM journal_entries WHERE seq > ? AND +form = ?`, cursor, form).Scan(&ahead); err != nil {
		return c, fmt.Errorf("count journal entries: %w: %w", journal.ErrUnavailable, err)
	}
	// An entry committed between the reads may be counted twice: a live
	// count, not an audit.
	c.Entries = entries + queued
	c.Pending += queued + ahead
	return c, nil
}
