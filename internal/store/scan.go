package store

import (
	"fmt"
	"time"
)

// Scanner is one row of a query as both drivers have it (*sql.Row,
// *sql.Rows, pgx.Row).
type Scanner interface{ Scan(dest ...any) error }

// TimeDest makes t a Scan destination of either driver: a PostgreSQL
// timestamptz (time.Time), SQLite's Unix microseconds (int64), and NULL as
// the zero time.
func TimeDest(t *time.Time) any { return timeDest{t} }

type timeDest struct{ t *time.Time }

func (d timeDest) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.t = time.Time{}
	case time.Time:
		*d.t = v
	case int64:
		*d.t = time.UnixMicro(v)
	default:
		return fmt.Errorf("scan %T into a time", v)
	}
	return nil
}

// UploadColumns are the columns ScanUpload reads, of uploads u left joined
// with upload_claims c.
const UploadColumns = `u.id, u.form, u.field, u.size, u.name, u.type, u.sha256, u.created_at, u.expires_at, coalesce(c.entry_id, '')`

// ScanUpload reads UploadColumns.
func ScanUpload(sc Scanner) (Upload, error) {
	var (
		u   Upload
		sum []byte
	)
	if err := sc.Scan(&u.ID, &u.Form, &u.Field, &u.Size, &u.Name, &u.Type, &sum, TimeDest(&u.CreatedAt), TimeDest(&u.ExpiresAt), &u.Entry); err != nil {
		return u, err
	}
	u.Complete = len(sum) == len(u.SHA256)
	copy(u.SHA256[:], sum)
	return u, nil
}

// ScanEntryRef reads an entry's id, site, form, key and seq.
func ScanEntryRef(sc Scanner) (EntryRef, error) {
	var (
		e   EntryRef
		seq int64
	)
	err := sc.Scan(&e.ID, &e.Site, &e.Form, &e.Key, &seq)
	e.Seq = uint64(seq)
	return e, err
}
