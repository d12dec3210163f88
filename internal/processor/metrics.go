package processor

import (
	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the processor's Prometheus series.
type Metrics struct {
	outcomes     *prometheus.CounterVec
	replayed     prometheus.Counter
	storeErrors  prometheus.Counter
	reconciled   prometheus.Counter
	applySeconds prometheus.Histogram
	atAppend     prometheus.Counter
	byStatus     map[string]prometheus.Counter
}

// NewMetrics makes the series and registers them with reg (nil: not
// registered, for tests and tools).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formd_outcomes_total",
			Help: "Entries decided, by outcome (stored, waitlisted, duplicate, rejected, spam, dead-lettered). Duplicates are participants blocked from registering twice.",
		}, []string{"status"}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formd_outcomes_replayed_total",
			Help: "Entries delivered again whose outcome was already decided (redeliveries, replays).",
		}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formd_store_errors_total",
			Help: "Batches that failed because the store was unavailable; they stay pending and are retried.",
		}),
		reconciled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formd_reconciled_total",
			Help: "Stale entries re-driven by the reconciler.",
		}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "formd_store_apply_seconds",
			Help:    "Time to decide one batch in the store, commit included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		atAppend: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formd_decided_at_append_total",
			Help: "Entries decided in the commit that journaled them (the embedded fast path); the others are decided by the processor's workers.",
		}),
	}
	m.byStatus = map[string]prometheus.Counter{}
	for _, s := range []string{store.StatusStored, store.StatusPending, store.StatusWaitlisted, store.StatusDuplicate, store.StatusRejected, store.StatusSpam, store.StatusDeadLettered, store.StatusUploadUsed, store.StatusUploadMissing, store.StatusChallengeInvalid} {
		m.byStatus[s] = m.outcomes.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.outcomes, m.replayed, m.storeErrors, m.reconciled, m.applySeconds, m.atAppend)
	}
	return m
}

func (m *Metrics) observe(o store.Outcome) {
	if o.Replayed {
		m.replayed.Inc()
		return
	}
	if c, ok := m.byStatus[o.Decision]; ok {
		c.Inc()
	}
}
