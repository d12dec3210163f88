package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
)

// Readers sizes the pool of read connections.
func TestReaders(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "store.db"), Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.rdb.Stats().MaxOpenConnections; got != 3 {
		t.Fatalf("a pool of %d readers, want 3", got)
	}
}
