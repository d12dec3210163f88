package outbox

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count deliveries; the outbox's backlog is read from the store at
// scrape time (package server).
type Metrics struct {
	attempts      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	breakerOpened prometheus.Counter
}

// NewMetrics registers the dispatcher's metrics with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "formd_deliveries_total",
			Help: "Delivery attempts by kind (webhook, email), endpoint and outcome (delivered, retry, gone, refused)."}, []string{"kind", "endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "formd_delivery_seconds",
			Help: "Time of one delivery attempt, to the receiver's answer.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 13)}, []string{"kind"}),
		breakerOpened: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_delivery_breaker_opened_total",
			Help: "Times an endpoint's circuit breaker opened after consecutive failures."}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.latency, m.breakerOpened)
	}
	return m
}

func (m *Metrics) observe(o outcome, endpoint string) {
	m.attempts.WithLabelValues(o.kind, endpoint, o.result).Inc()
	m.latency.WithLabelValues(o.kind).Observe(o.latency.Seconds())
}
