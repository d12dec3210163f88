package intake

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the intake's Prometheus series.
type Metrics struct {
	answers *prometheus.CounterVec
	latency *prometheus.HistogramVec

	mu       sync.Mutex
	children map[metricKey]prometheus.Counter
	hists    map[string]prometheus.Observer
}

type metricKey struct {
	route, status, code string
}

// NewMetrics makes the series and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formd_intake_answers_total",
			Help: "Answers of the public API by route, HTTP status and problem code (empty for successes).",
		}, []string{"route", "status", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "formd_intake_request_seconds",
			Help:    "Time from request to answer, by route; for submit it includes the wait for the outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
		children: map[metricKey]prometheus.Counter{},
		hists:    map[string]prometheus.Observer{},
	}
	if reg != nil {
		reg.MustRegister(m.answers, m.latency)
	}
	return m
}

func (m *Metrics) observe(route string, status int, code string, d time.Duration) {
	k := metricKey{route, strconv.Itoa(status), code}
	m.mu.Lock()
	c, ok := m.children[k]
	if !ok {
		c = m.answers.WithLabelValues(k.route, k.status, k.code)
		m.children[k] = c
	}
	h, ok := m.hists[route]
	if !ok {
		h = m.latency.WithLabelValues(route)
		m.hists[route] = h
	}
	m.mu.Unlock()
	c.Inc()
	h.Observe(d.Seconds())
}
