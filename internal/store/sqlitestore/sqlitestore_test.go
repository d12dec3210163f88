package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		path := filepath.Join(t.TempDir(), "store.db")
		return func() store.Store {
			s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path, Now: now})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return s
		}
	})
}

func TestAccounts(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T, now func() time.Time) func() store.Store {
		path := filepath.Join(t.TempDir(), "store.db")
		return func() store.Store {
			s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path, Now: now})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return s
		}
	})
}
