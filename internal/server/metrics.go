package server

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	backlogDesc   = prometheus.NewDesc("formd_journal_backlog", "Journal entries appended but not yet acknowledged (waiting or being processed).", nil, nil)
	oldestDesc    = prometheus.NewDesc("formd_journal_oldest_pending_age_seconds", "Age of the oldest unacknowledged journal entry; 0 when the backlog is empty.", nil, nil)
	lastSeqDesc   = prometheus.NewDesc("formd_journal_last_seq", "Position of the newest journal entry.", nil, nil)
	capLeftDesc   = prometheus.NewDesc("formd_capacity_left", "Free places per form with a capacity.", []string{"form"}, nil)
	waitlistDesc  = prometheus.NewDesc("formd_waitlisted", "Waitlisted entries per form.", []string{"form"}, nil)
	deadDesc      = prometheus.NewDesc("formd_dead_letters", "Entries dead-lettered and not yet retried (up to 10000).", nil, nil)
	laxDesc       = prometheus.NewDesc("formd_journal_durability_lax", "1 for each reason the journal's settings could lose acknowledged entries (a NATS stream with one replica, servers without sync_interval: always); alert on it.", []string{"reason"}, nil)
	scrapeErrDesc = prometheus.NewDesc("formd_scrape_errors", "1 when a part of the scrape could not be read.", []string{"part"}, nil)
	writableDesc  = prometheus.NewDesc("formd_journal_writable", "1 when the journal can take appends now (a write the size of a submission commits), 0 when it cannot (disk full, file read-only, --journal-max-size reached): submissions get 503.", nil, nil)
	jSizeDesc     = prometheus.NewDesc("formd_journal_size_bytes", "Bytes the journal's file uses (its pages in use): what --journal-max-size bounds.", nil, nil)
	jMaxSizeDesc  = prometheus.NewDesc("formd_journal_max_size_bytes", "The journal's bound (--journal-max-size) in bytes; absent when there is none.", nil, nil)
)

// journalCollector reads the journal's backlog at scrape time.
type journalCollector struct{ j journal.Journal }

func (c *journalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogDesc
	ch <- oldestDesc
	ch <- lastSeqDesc
	ch <- laxDesc
	ch <- writableDesc
	ch <- jSizeDesc
	ch <- jMaxSizeDesc
}

func (c *journalCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if w, ok := c.j.(journal.Writability); ok {
		v := 1.0
		if err := w.Writable(ctx); err != nil {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(writableDesc, prometheus.GaugeValue, v)
	}
	st, err := c.j.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "journal")
		return
	}
	age := 0.0
	if !st.OldestPending.IsZero() {
		age = time.Since(st.OldestPending).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(st.Backlog))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(lastSeqDesc, prometheus.GaugeValue, float64(st.LastSeq))
	if l, ok := c.j.(journal.LaxDurability); ok {
		for _, reason := range l.LaxDurability() {
			ch <- prometheus.MustNewConstMetric(laxDesc, prometheus.GaugeValue, 1, reason)
		}
	}
	if sz, ok := c.j.(journal.Sizer); ok {
		used, limit, err := sz.Size(ctx)
		if err != nil {
			ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "journal_size")
			return
		}
		ch <- prometheus.MustNewConstMetric(jSizeDesc, prometheus.GaugeValue, float64(used))
		if limit > 0 {
			ch <- prometheus.MustNewConstMetric(jMaxSizeDesc, prometheus.GaugeValue, float64(limit))
		}
	}
}

// recountEvery is how long a count a scrape made (the outbox's backlog,
// the dead letters) is served to the next scrapes before it is made
// again: the counts scan rows (every pending delivery, under a peak tens
// of thousands), and a scraper twice a second, or two Prometheus
// replicas, paid that scan on every scrape. Two seconds late is well
// within any alert's "for:".
const recountEvery = 2 * time.Second

// recent keeps the last value a count returned for recountEvery; the
// scrapes in that time share it, and concurrent scrapes share one count.
// An error is not kept: the next scrape counts again.
type recent[T any] struct {
	now func() time.Time // nil: time.Now

	mu sync.Mutex
	at time.Time
	ok bool
	v  T
}

func (r *recent[T]) get(ctx context.Context, count func(context.Context) (T, error)) (T, error) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := now(); r.ok && t.Sub(r.at) < recountEvery && !t.Before(r.at) {
		return r.v, nil
	}
	v, err := count(ctx)
	if err != nil {
		r.ok = false
		return v, err
	}
	r.v, r.at, r.ok = v, now(), true
	return v, nil
}

// storeCollector reads places at scrape time, and dead letters at most
// every recountEvery.
type storeCollector struct {
	s    store.Store
	dead recent[int]
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- capLeftDesc
	ch <- waitlistDesc
	ch <- deadDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	caps, err := c.s.Capacities(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "capacity")
	}
	for form, cp := range caps {
		if cp.Limit != nil {
			ch <- prometheus.MustNewConstMetric(capLeftDesc, prometheus.GaugeValue, float64(cp.Left()), form)
		}
		ch <- prometheus.MustNewConstMetric(waitlistDesc, prometheus.GaugeValue, float64(cp.Waitlisted), form)
	}
	dead, err := c.dead.get(ctx, func(ctx context.Context) (int, error) {
		dls, err := c.s.DeadLetters(ctx, 10000)
		return len(dls), err
	})
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "dead_letters")
		return
	}
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(dead))
}

var (
	outboxPendingDesc  = prometheus.NewDesc("formd_outbox_pending", "Deliveries (webhooks, e-mail) not yet made.", nil, nil)
	outboxOldestDesc   = prometheus.NewDesc("formd_outbox_oldest_pending_seconds", "Age of the event of the oldest delivery not yet made; 0 when none waits.", nil, nil)
	outboxFailedDesc   = prometheus.NewDesc("formd_outbox_failed", "Delivery dead letters: deliveries given up on after their retries, waiting for an owner's redelivery.", nil, nil)
	outboxUnfannedDesc = prometheus.NewDesc("formd_outbox_unfanned_events", "Events not yet turned into deliveries.", nil, nil)
	disabledDesc       = prometheus.NewDesc("formd_endpoint_disabled", "1 for each endpoint switched off because it answered 410 Gone: nothing is delivered to it until an owner enables it again.", []string{"endpoint"}, nil)
)

// outboxCollector reads the switched-off endpoints at scrape time, and
// counts the outbox's backlog at most every recountEvery (the ages are
// still taken at scrape time, from the oldest pending event's time).
type outboxCollector struct {
	s interface {
		DeliveryStats(ctx context.Context) (store.DeliveryStats, error)
		DisabledEndpoints(ctx context.Context) (map[string]string, error)
	}
	stats recent[store.DeliveryStats]
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxPendingDesc
	ch <- outboxOldestDesc
	ch <- outboxFailedDesc
	ch <- outboxUnfannedDesc
	ch <- disabledDesc
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if off, err := c.s.DisabledEndpoints(ctx); err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "disabled_endpoints")
	} else {
		for endpoint := range off {
			ch <- prometheus.MustNewConstMetric(disabledDesc, prometheus.GaugeValue, 1, endpoint)
		}
	}
	st, err := c.stats.get(ctx, c.s.DeliveryStats)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "outbox")
		return
	}
	age := 0.0
	if !st.OldestPending.IsZero() {
		age = time.Since(st.OldestPending).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(outboxPendingDesc, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(outboxOldestDesc, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(outboxFailedDesc, prometheus.GaugeValue, float64(st.Failed))
	ch <- prometheus.MustNewConstMetric(outboxUnfannedDesc, prometheus.GaugeValue, float64(st.UnfannedEvents))
}

var (
	fsFreeDesc = prometheus.NewDesc("formd_data_fs_free_bytes", "Bytes free for formd on the filesystem that holds --data.", nil, nil)
	fsSizeDesc = prometheus.NewDesc("formd_data_fs_size_bytes", "Size in bytes of the filesystem that holds --data.", nil, nil)
)

// dataFSCollector reads the free space under the data directory at
// scrape time: the journal, the store and uploads all grow there.
type dataFSCollector struct{ dir string }

func (c *dataFSCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fsFreeDesc
	ch <- fsSizeDesc
}

func (c *dataFSCollector) Collect(ch chan<- prometheus.Metric) {
	free, size, err := diskSpace(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return // no data directory: nothing of formd's is kept on this disk
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1, "data_fs")
		return
	}
	ch <- prometheus.MustNewConstMetric(fsFreeDesc, prometheus.GaugeValue, float64(free))
	ch <- prometheus.MustNewConstMetric(fsSizeDesc, prometheus.GaugeValue, float64(size))
}
