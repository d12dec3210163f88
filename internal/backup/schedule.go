package backup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formd/formd/internal/atomicfile"
)

// Metrics are the backup series, registered on every server.
// formd_backup_period_seconds is the schedule's period (0 without one);
// formd_backup_last_success_timestamp_seconds is exported only by a
// server with a schedule, once it knows of a backup (the newest on disk
// at start, then each it takes): a server that takes no backups exports
// no timestamp for an alert to find old.
type Metrics struct {
	lastSuccess *timestamp
	period      prometheus.Gauge
	failures    prometheus.Counter
	duration    prometheus.Histogram
}

// NewMetrics registers the backup series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lastSuccess: &timestamp{desc: prometheus.NewDesc("formd_backup_last_success_timestamp_seconds",
			"Unix time at which the newest scheduled backup finished (the newest in --backup-dir at start); not exported without a schedule, nor before any backup.", nil, nil)},
		period: prometheus.NewGauge(prometheus.GaugeOpts{Name: "formd_backup_period_seconds",
			Help: "The period of scheduled backups (--backup-every); 0: no schedule."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_backup_failures_total",
			Help: "Scheduled backups that failed."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "formd_backup_duration_seconds",
			Help: "How long each scheduled backup took, successful or not.", Buckets: []float64{0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000, 3000}}),
	}
	reg.MustRegister(m.lastSuccess, m.period, m.failures, m.duration)
	return m
}

// timestamp is a gauge that is exported only once it is set.
type timestamp struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	at   time.Time
}

func (t *timestamp) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

func (t *timestamp) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	at := t.at
	t.mu.Unlock()
	if at.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(t.desc, prometheus.GaugeValue, float64(at.Unix()))
}

func (t *timestamp) set(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at.After(t.at) {
		t.at = at
	}
}

// ScheduleOptions configure backups inside the server.
type ScheduleOptions struct {
	Data, Dir       string
	Drivers         Drivers
	Every           time.Duration
	Keep            int
	Version, Commit string
	// UploadsElsewhere names where complete uploads' bytes live when not
	// under Data (the --uploads bucket): see Options.
	UploadsElsewhere string
	Now              func() time.Time
	Log              *slog.Logger
	Metrics          *Metrics
	// after waits (tests replace it).
	after func(time.Duration) <-chan time.Time
}

// Schedule takes a backup of the data directory every so often into a
// directory of its own under Dir (named by its start time), and keeps the
// newest Keep.
type Schedule struct {
	opts ScheduleOptions

	mu     sync.Mutex
	status Status
}

// Status is what the last scheduled backups did, for the console.
type Status struct {
	LastSuccess, LastFailure time.Time
	// LastError is why the last one failed; empty when the last one
	// succeeded.
	LastError string
}

// NewSchedule makes a schedule; Run runs it.
func NewSchedule(opts ScheduleOptions) *Schedule {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if opts.after == nil {
		opts.after = time.After
	}
	opts.Metrics.period.Set(opts.Every.Seconds())
	s := &Schedule{opts: opts}
	if _, finished, ok := s.newest(); ok {
		opts.Metrics.lastSuccess.set(finished)
	}
	return s
}

// Status is the schedule's last result.
func (s *Schedule) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Run takes a backup every Every until ctx ends. The first is due Every
// after the newest backup in Dir began (at once when there is none, or
// it is older), not Every after this start: a server restarted more
// often than its period still takes its backups.
func (s *Schedule) Run(ctx context.Context) {
	for {
		wait := s.Next().Sub(s.opts.Now())
		if wait < 0 {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-s.opts.after(wait):
			s.runOnce(ctx) //nolint:errcheck // logged and counted there
		}
	}
}

// Next is when the next backup is due: Every after the newest in Dir
// began, or now when there is none or that is past. After a failure it is Every after
// that failure, so that a failing backup is not retried in a loop.
func (s *Schedule) Next() time.Time {
	now := s.opts.Now()
	due := now
	if started, _, ok := s.newest(); ok {
		due = started.Add(s.opts.Every)
	}
	s.mu.Lock()
	failed := s.status.LastFailure
	s.mu.Unlock()
	if !failed.IsZero() && failed.Add(s.opts.Every).After(due) {
		due = failed.Add(s.opts.Every)
	}
	if due.Before(now) {
		return now // overdue: at once
	}
	return due
}

// newest is the newest whole backup in Dir: when it began (its name) and
// finished (its manifest; its start if that cannot be read).
func (s *Schedule) newest() (started, finished time.Time, ok bool) {
	names, err := s.backups()
	if err != nil || len(names) == 0 {
		return time.Time{}, time.Time{}, false
	}
	name := names[len(names)-1]
	started, _ = time.Parse(nameLayout, name)
	finished = started
	if m, err := ReadManifest(filepath.Join(s.opts.Dir, name)); err == nil && !m.Finished.IsZero() {
		finished = m.Finished
	}
	return started, finished, true
}

// nameLayout names a scheduled backup by its start time, so names sort
// in time order.
const nameLayout = "formd-20060102T150405.000Z"

// runOnce takes one backup: into a hidden directory first, renamed to its
// name only once whole, so that a backup cut short by a crash is never
// taken for one. Then it removes the oldest beyond Keep.
func (s *Schedule) runOnce(ctx context.Context) error {
	start := s.opts.Now()
	err := s.take(ctx, start)
	s.opts.Metrics.duration.Observe(s.opts.Now().Sub(start).Seconds())
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.opts.Metrics.failures.Inc()
		s.status.LastFailure, s.status.LastError = start, err.Error()
		s.opts.Log.Error("scheduled backup failed", "dir", s.opts.Dir, "err", err)
		return err
	}
	s.opts.Metrics.lastSuccess.set(s.opts.Now())
	s.status.LastSuccess, s.status.LastError = start, ""
	return nil
}

func (s *Schedule) take(ctx context.Context, start time.Time) error {
	if err := atomicfile.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("cannot make the backup directory %s (--backup-dir, FORMD_BACKUP_DIR): %w; choose one this user can write", s.opts.Dir, err)
	}
	name := start.UTC().Format(nameLayout)
	final := filepath.Join(s.opts.Dir, name)
	if _, err := os.Stat(final); err == nil {
		return fmt.Errorf("a backup named %s is already in %s; backups are taken at most once a millisecond", name, s.opts.Dir)
	}
	partial := filepath.Join(s.opts.Dir, "."+name+".partial")
	os.RemoveAll(partial) //nolint:errcheck // a leftover of a killed run
	// The newest earlier backup lends its upload files (hard links):
	// content files never change, so each backup is whole on its own and
	// a file is stored once however many backups hold it.
	var linkFrom string
	if names, err := s.backups(); err == nil && len(names) > 0 {
		linkFrom = filepath.Join(s.opts.Dir, names[len(names)-1])
	}
	_, err := Take(ctx, Options{Data: s.opts.Data, To: partial, Drivers: s.opts.Drivers, Version: s.opts.Version, Commit: s.opts.Commit, Now: s.opts.Now,
		UploadsElsewhere: s.opts.UploadsElsewhere, LinkFrom: linkFrom})
	if err != nil {
		os.RemoveAll(partial) //nolint:errcheck // best effort: nothing of a failed backup is kept
		return err
	}
	if err := os.Rename(partial, final); err != nil {
		os.RemoveAll(partial) //nolint:errcheck // best effort
		return fmt.Errorf("name the backup %s: %w", final, err)
	}
	if err := atomicfile.SyncDir(s.opts.Dir); err != nil {
		return fmt.Errorf("sync %s: %w", s.opts.Dir, err)
	}
	return s.prune()
}

// prune removes the oldest scheduled backups beyond Keep, and leftovers
// of runs that a crash cut short.
func (s *Schedule) prune() error {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("list the backups in %s: %w", s.opts.Dir, err)
	}
	names, err := s.backups()
	if err != nil {
		return err
	}
	for len(names) > s.opts.Keep {
		if err := os.RemoveAll(filepath.Join(s.opts.Dir, names[0])); err != nil {
			return fmt.Errorf("remove the old backup %s: %w", filepath.Join(s.opts.Dir, names[0]), err)
		}
		names = names[1:]
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".formd-") && strings.HasSuffix(e.Name(), ".partial") {
			os.RemoveAll(filepath.Join(s.opts.Dir, e.Name())) //nolint:errcheck // a leftover; the next run tries again
		}
	}
	return nil
}

// backups lists the scheduled backups in Dir, oldest first.
func (s *Schedule) backups() ([]string, error) {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("list the backups in %s: %w", s.opts.Dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := time.Parse(nameLayout, e.Name()); err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
