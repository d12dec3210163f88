package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// countingOutbox is the outbox's store for outboxCollector: it counts the
// counts it is asked for, and fails while err is set.
type countingOutbox struct {
	calls   int
	pending int64
	err     error
}

func (c *countingOutbox) DeliveryStats(context.Context) (store.DeliveryStats, error) {
	c.calls++
	return store.DeliveryStats{Pending: c.pending}, c.err
}

func (c *countingOutbox) DisabledEndpoints(context.Context) (map[string]string, error) {
	return nil, nil
}

// TestOutboxBacklogRecountedAtMostEveryInterval: scrapes within
// recountEvery of a count share it; a later one counts again; a failed
// count is not kept.
func TestOutboxBacklogRecountedAtMostEveryInterval(t *testing.T) {
	t.Parallel()
	type step struct {
		after     time.Duration // clock advance before the scrape
		pending   int64         // what the store would count now
		fail      bool
		wantCalls int
		want      float64 // formd_outbox_pending scraped; -1: absent (scrape error)
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{name: "scrapes in the interval share one count", steps: []step{
			{pending: 5, wantCalls: 1, want: 5},
			{after: 500 * time.Millisecond, pending: 7, wantCalls: 1, want: 5},
			{after: recountEvery - 500*time.Millisecond - 1, pending: 7, wantCalls: 1, want: 5},
			{after: 1, pending: 7, wantCalls: 2, want: 7},
		}},
		{name: "a failed count is counted again at the next scrape", steps: []step{
			{pending: 3, fail: true, wantCalls: 1, want: -1},
			{pending: 4, wantCalls: 2, want: 4},
			{after: time.Second, pending: 9, wantCalls: 2, want: 4},
		}},
		{name: "a clock set back counts again", steps: []step{
			{pending: 1, wantCalls: 1, want: 1},
			{after: -time.Minute, pending: 2, wantCalls: 2, want: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
			st := &countingOutbox{}
			c := &outboxCollector{s: st}
			c.stats.now = func() time.Time { return now }
			for i, s := range tc.steps {
				now = now.Add(s.after)
				st.pending, st.err = s.pending, nil
				if s.fail {
					st.err = errors.New("store down")
				}
				got := scrapeGauge(t, c, "formd_outbox_pending")
				if st.calls != s.wantCalls || got != s.want {
					t.Errorf("scrape %d: %d counts, formd_outbox_pending %v; want %d counts, %v", i+1, st.calls, got, s.wantCalls, s.want)
				}
			}
		})
	}
}

// scrapeGauge collects c once and returns the value of the gauge name
// (without labels), or -1 when it is absent.
func scrapeGauge(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
