package sqlitestore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// BenchmarkApply measures deciding batches of new registrations (one
// claim each, a form with a capacity), commit and fsync included.
func BenchmarkApply(b *testing.B) {
	for _, batch := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(b.TempDir(), "store.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			limit := 1 << 30
			if err := s.PutForms(context.Background(), []form.Record{{ID: "f", Source: []byte("id: f"), Capacity: &limit, WhenFull: "reject"}}); err != nil {
				b.Fatal(err)
			}
			data := []byte(`{"name":"Person 12345","phone":"+8613900012345","tickets":1}`)
			n := 0
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				subs := make([]journal.Entry, batch)
				for j := range subs {
					n++
					k := fmt.Sprintf("key-%d", n)
					subs[j] = journal.Entry{Seq: uint64(n), ID: fmt.Sprintf("0194a2b3-c4d5-7e6f-8a9b-%012d", n), Site: "default", Form: "f", Key: k,
						Fingerprint: sha256.Sum256([]byte(k)), ReceivedAt: time.Now(), Claims: []string{fmt.Sprintf("%x", sha256.Sum256([]byte(k)))[:32]}, Data: data}
				}
				if _, err := s.Apply(context.Background(), subs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
