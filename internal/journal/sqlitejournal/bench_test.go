package sqlitejournal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
)

// BenchmarkAppend measures durable appends from many concurrent writers,
// as the intake makes them: each waits for the group commit (and its
// fsync) that makes its entry durable.
func BenchmarkAppend(b *testing.B) {
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: filepath.Join(b.TempDir(), "journal.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	var n atomic.Int64
	b.SetParallelism(256)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e := journaltest.NewEntry("f", fmt.Sprint(n.Add(1)))
			if _, err := j.Append(context.Background(), e, true); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
