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
	breakerOpen   *prometheus.GaugeVec
}

// NewMetrics registers the dispatcher's metrics with reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "formd_deliveries_total",
			Help: "Delivery attempts by kind (webhook, email, slack, wecom, dingtalk, feishu), endpoint and outcome (delivered, retry, gone, refused, skipped)."}, []string{"kind", "endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "formd_delivery_seconds",
			Help: "Time of one delivery attempt, to the receiver's answer.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 13)}, []string{"kind"}),
		breakerOpened: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_delivery_breaker_opened_total",
			Help: "Times an endpoint's circuit breaker opened: its failure rate tripped it, or its probe failed."}),
		breakerOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "formd_delivery_breaker_open",
			Help: "1 while an endpoint's circuit breaker holds its deliveries back (open, or waiting for its probe), 0 when closed; e-mail is endpoint smtp."}, []string{"endpoint"}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.latency, m.breakerOpened, m.breakerOpen)
	}
	return m
}

func (m *Metrics) observe(kind string, r Outcome, endpoint string) {
	m.attempts.WithLabelValues(kind, endpoint, string(r.Outcome)).Inc()
	m.latency.WithLabelValues(kind).Observe(r.Latency.Seconds())
}

func (m *Metrics) breakerState(key string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	m.breakerOpen.WithLabelValues(key).Set(v)
}
