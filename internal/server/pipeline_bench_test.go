package server_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// BenchmarkPipeline measures the durable path without HTTP: concurrent
// submitters register a waiter, append to the journal (group commit,
// fsync) and wait for the processor to decide the entry in the store
// (fsync). Keys and claims are random, as real ones are.
func BenchmarkPipeline(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		b.Fatal(err)
	}
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "store.db")})
	if err != nil {
		b.Fatal(err)
	}
	limit := 1 << 30
	if err := s.PutForms(ctx, []form.Record{{ID: "f", Source: []byte("id: f"), Capacity: &limit, WhenFull: "waitlist"}}); err != nil {
		b.Fatal(err)
	}
	notify := processor.NewNotifier()
	p := processor.New(j, s, notify, processor.Options{})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(runCtx) })
	defer func() { stop(); wg.Wait(); j.Close(); s.Close() }()

	var n atomic.Int64
	data := []byte(`{"name":"Person 12345","phone":"+8613912345678","tickets":1}`)
	b.SetParallelism(256)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			sum := sha256.Sum256(fmt.Appendf(nil, "%d", i))
			key := fmt.Sprintf("%x", sum[:16])
			e := journal.Entry{ID: fmt.Sprintf("0194a2b3-c4d5-7e6f-8a9b-%012d", i), Site: "default", Form: "f", Key: key,
				Fingerprint: sum, ReceivedAt: time.Now(), Claims: []string{fmt.Sprintf("%x", sum[16:])}, Data: data}
			ch, done := notify.Wait("f", key)
			if _, err := j.Append(ctx, e, true); err != nil {
				b.Error(err)
				done()
				return
			}
			<-ch
			done()
		}
	})
}
