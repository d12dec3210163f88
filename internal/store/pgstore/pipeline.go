package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// inPipeline runs fn, which sends one batch on the pool and reads its
// results, as one transaction in one round trip: a batch is a pipeline
// ended by one Sync, which PostgreSQL runs as one implicit transaction
// (every statement committed together at the Sync, or none when one
// fails). It saves the BEGIN and the COMMIT round trips of inTx, for a
// decision that is one batch anyway (Apply). As inTx, it runs fn again up
// to three times on a deadlock or serialization failure and classifies the
// error that remains.
func (s *Store) inPipeline(ctx context.Context, op string, fn func(send func(*pgx.Batch) pgx.BatchResults) error) error {
	send := func(b *pgx.Batch) pgx.BatchResults { return s.pool.SendBatch(ctx, b) }
	return retrying(ctx, op, func() error { return fn(send) })
}

// exists runs a SELECT EXISTS outside a transaction: one round trip that
// lets a loop with nothing to do (the outbox's fan-out and claims on an
// idle instance) skip the three of a transaction.
func (s *Store) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var yes bool
	err := s.pool.QueryRow(ctx, query, args...).Scan(&yes)
	return yes, err
}
