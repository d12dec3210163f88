package store_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// row hands its values to Scan's destinations as database/sql hands a
// driver's values to a sql.Scanner: PostgreSQL gives int64, time.Time and
// []byte; SQLite gives int64 (times in Unix microseconds) and []byte. A
// destination that is not a sql.Scanner is filled by plain assignment.
type row []any

func (r row) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("%d destinations for %d columns", len(dest), len(r))
	}
	for i, d := range dest {
		if s, ok := d.(sql.Scanner); ok {
			if err := s.Scan(r[i]); err != nil {
				return fmt.Errorf("column %d: %w", i, err)
			}
			continue
		}
		switch d := d.(type) {
		case *string:
			*d = r[i].(string)
		default:
			return fmt.Errorf("column %d: no plain assignment to %T in this test", i, d)
		}
	}
	return nil
}

// The drivers read one row model of an entry with the same function: each
// one's types come out the same, an erased entry's data is nil, and the
// data is the row's own copy, not the driver's buffer.
func TestScanRow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	for _, tc := range []struct {
		name     string
		received any
		data     any
	}{
		{"postgres", at, []byte(`{"a":1}`)},
		{"sqlite", at.UnixMicro(), []byte(`{"a":1}`)},
		{"erased", at.UnixMicro(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf, _ := tc.data.([]byte)
			r, err := store.ScanRow(row{int64(7), "id", "form", "key", "stored", tc.received, tc.data, nil, ""})
			if err != nil {
				t.Fatal(err)
			}
			if r.Seq != 7 || r.ID != "id" || r.Form != "form" || r.Key != "key" || r.Status != "stored" || !r.ReceivedAt.Equal(at) ||
				!r.CheckedInAt.IsZero() || r.Door != "" {
				t.Fatalf("row %+v", r)
			}
			if buf == nil {
				if r.Data != nil {
					t.Fatalf("erased data = %q, want nil", r.Data)
				}
				return
			}
			buf[2] = 'X' // the driver reuses its buffer
			if string(r.Data) != `{"a":1}` {
				t.Fatalf("data = %q: it shares the driver's buffer", r.Data)
			}
		})
	}
}

// The detail adds the receipt and the decision; a same_as that is NULL is
// empty.
func TestScanDetail(t *testing.T) {
	t.Parallel()
	fp := make([]byte, 32)
	fp[0], fp[31] = 1, 2
	d, err := store.ScanDetail(row{int64(1), "id", "form", "key", "cancelled", int64(5), nil, int64(7), "door B", "site", fp, "stored", int64(9), nil})
	if err != nil {
		t.Fatal(err)
	}
	if !d.CheckedInAt.Equal(time.UnixMicro(7)) || d.Door != "door B" {
		t.Fatalf("check-in of the detail: %v at %q", d.CheckedInAt, d.Door)
	}
	if d.Site != "site" || d.Receipt[0] != 1 || d.Receipt[31] != 2 || d.Decision != "stored" || !d.DecidedAt.Equal(time.UnixMicro(9)) || d.SameAs != "" {
		t.Fatalf("detail %+v", d)
	}
	if _, err := store.ScanRow(row{"seven", "id", "form", "key", "stored", int64(5), nil, nil, ""}); err == nil {
		t.Fatal("a text seq was scanned into a number")
	}
}
