package pgstore

import (
	"context"
	"testing"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// MaxConns sizes the pool unless the URL does.
func TestMaxConns(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	for _, tc := range []struct {
		url      string
		maxConns int
		want     int32
	}{
		{u, 3, 3},
		{u + "&pool_max_conns=5", 3, 5},
	} {
		s, err := Open(context.Background(), Options{URL: tc.url, MaxConns: tc.maxConns})
		if err != nil {
			t.Fatal(err)
		}
		got := s.pool.Config().MaxConns
		s.Close()
		if got != tc.want {
			t.Errorf("%s with MaxConns %d: pool of %d, want %d", tc.url, tc.maxConns, got, tc.want)
		}
	}
}
