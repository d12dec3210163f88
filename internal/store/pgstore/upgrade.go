package pgstore

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// upgrade brings the database to this binary's schema: it refuses a newer
// one before writing anything, applies the migrations it lacks (package
// migrate: one transaction each, one instance at a time), mends what
// earlier releases' numbering left out (restorePromise) and records this
// release as its last writer.
func upgrade(ctx context.Context, pool *pgxpool.Pool, where string) error {
	if err := migrate.Apply(ctx, migrations{pool}, dialect, schema, "migrations", release.Schema{What: "store", Where: where}); err != nil {
		return err
	}
	return restorePromise(ctx, pool)
}

// restorePromise gives a database that recorded version 2 for
// 0002_retention.sql instead of 0002_promise.sql (releases before
// c44d8d9, such as b3f9691, the first: both files had number 2) what the
// promise added and nothing later re-made: entries.same_as,
// tokens.used_at and the settings table. Each statement is a no-op where
// the object is there; one transaction.
func restorePromise(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dialect.Lock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE tokens ADD COLUMN IF NOT EXISTS used_at timestamptz;
			ALTER TABLE entries ADD COLUMN IF NOT EXISTS same_as text;
			CREATE TABLE IF NOT EXISTS settings (name text PRIMARY KEY, value bytea NOT NULL)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	return nil
}

// ReadSchema says what the store's database at url has (in the schema
// its search_path names): its schema version (the newest migration it
// records), the newest this binary knows, the migrations it records that
// this binary lacks, and the release that last wrote it. It writes
// nothing. Open refuses a database for which Schema.TooNew is true.
func ReadSchema(ctx context.Context, url string) (release.Schema, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return release.Schema{What: "store"}, fmt.Errorf("read store schema: parse URL: %w", err)
	}
	s := release.Schema{What: "store", Where: where(cfg)}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return s, fmt.Errorf("read store schema: %w", err)
	}
	defer pool.Close()
	s, err = migrate.Status(ctx, migrations{pool}, dialect, schema, "migrations", s)
	if err != nil {
		return s, fmt.Errorf("read store schema %s: %w", s.Where, err)
	}
	return s, nil
}

// where names the database without its password: user@host/database.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s@%s/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database)
}
