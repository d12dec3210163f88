package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// upgrade brings the database to this binary's schema: it refuses a newer
// one before writing anything, mends what earlier releases' numbering
// left out (restorePromise), applies the migrations it lacks (package
// migrate: one transaction each, one instance at a time) and records this
// release as its last writer. It defines the functions of sql
// (functions.sql, or another version of it in tests) unless the database
// has a newer version's.
func upgrade(ctx context.Context, pool *pgxpool.Pool, where string, sql string) error {
	s, err := migrate.Status(ctx, migrations{pool}, dialect, schema, "migrations", release.Schema{What: "store", Where: where})
	if err != nil {
		return err
	}
	if err := release.Check(s); err != nil {
		return err
	}
	if err := restorePromise(ctx, pool); err != nil {
		return err
	}
	return migrate.Apply(ctx, migrations{pool}, withFunctions(dialect, sql), schema, "migrations", s)
}

// restorePromise applies 0002_promise.sql to a database that recorded
// version 2 for 0002_retention.sql instead: until c44d8d9 both files had
// number 2, and a store made by a release before it (b3f9691, the first)
// had version 2 recorded by the retention index, so the runner skipped
// the promise (entries.same_as, tokens.used_at, settings, and the
// formd_decide that 0003_outbox.sql replaces) for good. It looks at the
// schema itself, so it runs once and only where the promise is missing,
// in one transaction under the migration lock, before the migrations
// after it.
func restorePromise(ctx context.Context, pool *pgxpool.Pool) error {
	body, err := fs.ReadFile(schema, "migrations/0002_promise.sql")
	if err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dialect.Lock); err != nil {
			return err
		}
		var skipped bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL AND to_regclass('entries') IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'entries' AND column_name = 'same_as')`).Scan(&skipped); err != nil {
			return err
		}
		if !skipped {
			return nil
		}
		var two bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 2)`).Scan(&two); err != nil || !two {
			return err
		}
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			return err
		}
		// The same releases hashed participant claims without a key: they
		// are made again from the entries' data once the secret is known
		// (RekeyClaims).
		_, err := tx.Exec(ctx, `INSERT INTO settings(name, value) VALUES ('rekey_claims', '\x01'::bytea)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	return nil
}

var _ store.ClaimRekeyer = (*Store)(nil)

// RekeyClaims gives the live entries of a store from before keyed claims
// the claims their data makes today (store.ClaimRekeyer): once, while the
// mark restorePromise set is there, in one transaction under the
// migration lock that clears it. An entry keeps its old claims too, and
// lists both, so that cancelling it frees every one.
func (s *Store) RekeyClaims(ctx context.Context, claim func(form string, data json.RawMessage) []string) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, dialect.Lock); err != nil {
			return err
		}
		var marked bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM settings WHERE name = 'rekey_claims')`).Scan(&marked); err != nil || !marked {
			return err
		}
		type live struct {
			id, form string
			data     []byte
		}
		rows, _ := tx.Query(ctx, `SELECT id, form, data FROM entries
			WHERE status IN ('stored', 'waitlisted') AND data IS NOT NULL ORDER BY seq, id`)
		es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (live, error) {
			var e live
			err := r.Scan(&e.id, &e.form, &e.data)
			return e, err
		})
		if err != nil {
			return err
		}
		for _, e := range es {
			toks := claim(e.form, e.data)
			if len(toks) == 0 {
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO claims(form, claim, entry_id) SELECT $1, t, $3 FROM unnest($2::text[]) t ON CONFLICT DO NOTHING`, e.form, toks, e.id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE entries SET claims = claims || $1::text[] WHERE id = $2`, toks, e.id); err != nil {
				return err
			}
			n++
		}
		_, err = tx.Exec(ctx, `DELETE FROM settings WHERE name = 'rekey_claims'`)
		return err
	})
	if err != nil {
		return 0, classify("rekey claims", err)
	}
	return n, nil
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
