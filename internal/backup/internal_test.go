package backup

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// newData makes a data directory with a real (empty) store and journal,
// a secret, and padding bytes of data in the store.
func newData(t *testing.T, padding int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, StoreFile)})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, JournalFile)})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := os.WriteFile(filepath.Join(dir, SecretFile), []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if padding > 0 {
		w, err := sqlitedb.OpenWriter(filepath.Join(dir, StoreFile))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Exec(`CREATE TABLE test_padding (b BLOB); INSERT INTO test_padding VALUES (randomblob(?))`, padding); err != nil {
			t.Fatal(err)
		}
		if err := sqlitedb.Truncate(ctx, w, "main"); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sums reads the SHA-256 of every file in dir, to show it unchanged.
func sums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		_, s, err := fileSum(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = s
	}
	return out
}

func equalSums(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// mountTmpfs mounts a tmpfs of size bytes (mount options opts added) on a
// new directory, or skips: only root may mount. Under
// FORMD_REQUIRE_SERVICES=1 (CI, which runs as root) it fails instead, so
// that the disk-full and read-only cases cannot go quietly untested.
func mountTmpfs(t *testing.T, size int, opts string) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("mounting a small tmpfs needs root (FORMD_REQUIRE_SERVICES=%q)", os.Getenv("FORMD_REQUIRE_SERVICES"))
	}
	dir := t.TempDir()
	o := "size=" + strconv.Itoa(size)
	if opts != "" {
		o += "," + opts
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", o, "tmpfs", dir).CombinedOutput(); err != nil {
		skip("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() }) //nolint:errcheck // best effort
	return dir
}

// series are the series reg exports under name.
func series(t *testing.T, reg *prometheus.Registry, name string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

// exported says reg exports a series of that name.
func exported(t *testing.T, reg *prometheus.Registry, name string) bool {
	t.Helper()
	return len(series(t, reg, name)) > 0
}

// metric reads one series' value (a histogram's count) from reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	if ms := series(t, reg, name); len(ms) > 0 {
		switch m := ms[0]; {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// TestTakeDiskFull fills a real small disk during a backup: once caught
// before writing (the free space is below what the data takes), once
// when the disk fills in the middle of the copy (the free-space check
// told a lie). Each time the error names the directory and what to do,
// nothing of the backup is left, and the data is untouched.
func TestTakeDiskFull(t *testing.T) {
	data := newData(t, 3<<20)
	before := sums(t, data)
	for _, tc := range []struct {
		name  string
		free  func(string) (int64, error)
		check string
	}{
		{"before writing", nil, "full"},
		{"in the middle", func(string) (int64, error) { return 1 << 40, nil }, "full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := mountTmpfs(t, 1<<20, "")
			to := filepath.Join(disk, "b")
			_, err := Take(context.Background(), Options{Data: data, Drivers: drivers, To: to, freeSpace: tc.free})
			var full *DiskFullError
			if !errors.As(err, &full) {
				t.Fatalf("Take on a full disk: %v, want a DiskFullError", err)
			}
			msg := err.Error()
			for _, want := range []string{to, "free space there or choose a bigger disk", "the data is untouched"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if entries, _ := os.ReadDir(disk); len(entries) != 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("a failed backup left %v on the disk", names)
			}
			if !equalSums(before, sums(t, data)) {
				t.Error("the data changed during a failed backup")
			}
		})
	}
}

// TestTakeUnwritable is a backup directory this process cannot write: a
// read-only file system (root writes anywhere else), and a path through
// a file.
func TestTakeUnwritable(t *testing.T) {
	data := newData(t, 0)
	before := sums(t, data)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"through a file": filepath.Join(file, "b")}
	if os.Geteuid() == 0 {
		cases["read-only disk"] = filepath.Join(mountTmpfs(t, 1<<20, "ro"), "b")
	} else {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		cases["read-only directory"] = filepath.Join(ro, "b")
	}
	for name, to := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Take(context.Background(), Options{Data: data, Drivers: drivers, To: to})
			if err == nil {
				t.Fatal("Take into an unwritable directory succeeded")
			}
			for _, want := range []string{to, "choose a directory this user can write"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	if !equalSums(before, sums(t, data)) {
		t.Error("the data changed")
	}
}

// TestScheduleRunOnce takes scheduled backups, keeps the newest, counts
// a failure and reports it, and recovers.
func TestScheduleRunOnce(t *testing.T) {
	data := newData(t, 0)
	dir := filepath.Join(t.TempDir(), "backups")
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	s := NewSchedule(ScheduleOptions{Data: data, Drivers: drivers, Dir: dir, Every: time.Hour, Keep: 2, Now: func() time.Time { return now }, Metrics: m})
	if exported(t, reg, "formd_backup_last_success_timestamp_seconds") {
		t.Fatal("a last success is exported before any backup")
	}
	if got := metric(t, reg, "formd_backup_period_seconds"); got != 3600 {
		t.Fatalf("period %v, want 3600", got)
	}
	for range 3 {
		if err := s.runOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"formd-20261201T100000.000Z", "formd-20261201T110000.000Z"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("backups kept: %v, want %v", names, want)
	}
	for _, n := range names {
		if _, err := Verify(context.Background(), drivers, filepath.Join(dir, n)); err != nil {
			t.Errorf("scheduled backup %s: %v", n, err)
		}
	}
	if got, want := metric(t, reg, "formd_backup_last_success_timestamp_seconds"), float64(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC).Unix()); got != want {
		t.Errorf("last success %v, want %v", got, want)
	}

	// The data directory goes away: the next run fails, is counted and
	// reported, and leaves no partial backup behind.
	os.Rename(data, data+".gone") //nolint:errcheck // checked by the failure below
	if err := s.runOnce(context.Background()); err == nil {
		t.Fatal("a backup of a missing data directory succeeded")
	}
	if got := metric(t, reg, "formd_backup_failures_total"); got != 1 {
		t.Errorf("failures %v, want 1", got)
	}
	if st := s.Status(); st.LastError == "" || !st.LastFailure.Equal(now) {
		t.Errorf("status after a failure: %+v", st)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("a failed scheduled backup left something: %d entries in %s", len(entries), dir)
	}
	os.Rename(data+".gone", data) //nolint:errcheck // checked by the success below
	now = now.Add(time.Hour)
	if err := s.runOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.LastError != "" {
		t.Errorf("status after a success: %+v", st)
	}
	if n := metric(t, reg, "formd_backup_duration_seconds"); n != 5 {
		t.Errorf("backups timed: %v, want 5", n)
	}
}

// TestCompareVersions pins which releases are newer.
func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.2.3", "v1.2.3", 0}, {"v1.3.0", "v1.2.9", 1}, {"v1.2.3", "v2.0.0", -1},
		{"v1.2.3-rc1", "v1.2.3", 0}, {"dev", "v1.0.0", 0}, {"v1.0.0", "dev", 0},
	} {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// drivers are the embedded drivers' files, as the server wires them.
var drivers = Drivers{Store: sqlitestore.Files{}, Journal: sqlitejournal.Files{}}

// TestScheduleDueFromNewestBackup restarts a schedule (a new Schedule on
// the same --backup-dir) more often than its period: the next backup is
// due a period after the newest on disk, not a period after the start,
// and the last success is exported from that backup from the start. Run
// waits exactly until then (its waits are read through a fake timer).
func TestScheduleDueFromNewestBackup(t *testing.T) {
	data := newData(t, 0)
	dir := filepath.Join(t.TempDir(), "backups")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	first := NewSchedule(ScheduleOptions{Data: data, Drivers: drivers, Dir: dir, Every: time.Hour, Keep: 3, Now: clock})
	if got := first.Next(); !got.Equal(t0) {
		t.Fatalf("with no backup on disk the first is due at %v, want now (%v)", got, t0)
	}
	if err := first.runOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		restart time.Duration // after the backup
		due     time.Time
	}{
		{20 * time.Minute, t0.Add(time.Hour)},
		{59 * time.Minute, t0.Add(time.Hour)},
		{3 * time.Hour, t0.Add(3 * time.Hour)}, // overdue: at once
	} {
		now = t0.Add(tc.restart)
		reg := prometheus.NewRegistry()
		s := NewSchedule(ScheduleOptions{Data: data, Drivers: drivers, Dir: dir, Every: time.Hour, Keep: 3, Now: clock, Metrics: NewMetrics(reg)})
		if got := s.Next(); !got.Equal(tc.due) {
			t.Errorf("restarted %v after the backup: next due %v, want %v", tc.restart, got, tc.due)
		}
		if got, want := metric(t, reg, "formd_backup_last_success_timestamp_seconds"), float64(t0.Unix()); got != want {
			t.Errorf("restarted %v after the backup: last success %v, want the backup on disk's %v", tc.restart, got, want)
		}
	}

	// Run, restarted 20 minutes after the backup, waits 40 minutes, takes
	// one, then waits a period.
	now = t0.Add(20 * time.Minute)
	waits := make(chan time.Duration)
	fire := make(chan time.Time)
	s := NewSchedule(ScheduleOptions{Data: data, Drivers: drivers, Dir: dir, Every: time.Hour, Keep: 3, Now: clock,
		after: func(d time.Duration) <-chan time.Time { waits <- d; return fire }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	if d := <-waits; d != 40*time.Minute {
		t.Errorf("Run waits %v for the first backup, want 40m", d)
	}
	now = t0.Add(time.Hour)
	fire <- now
	if d := <-waits; d != time.Hour {
		t.Errorf("Run waits %v after its backup, want 1h", d)
	}
	cancel()
	<-done
	if names, err := s.backups(); err != nil || len(names) != 2 {
		t.Errorf("backups on disk: %v %v, want 2", names, err)
	}
}

// TestMetricsWithoutSchedule: a server with no schedule exports the
// period as 0 and no last-success timestamp (a 0 would read as a backup
// 56 years old to FormdBackupTooOld).
func TestMetricsWithoutSchedule(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	if exported(t, reg, "formd_backup_last_success_timestamp_seconds") {
		t.Error("a server with no schedule exports a last-success timestamp")
	}
	if got := metric(t, reg, "formd_backup_period_seconds"); got != 0 {
		t.Errorf("period %v without a schedule, want 0", got)
	}
}

// mountTmpfs skips where it cannot mount, and fails there under
// FORMD_REQUIRE_SERVICES=1. The test runs itself as a child process as
// the nobody user (who may not mount), so it needs root to start from.
func TestMountTmpfsHonoursRequireServices(t *testing.T) {
	if os.Getenv("MOUNT_TMPFS_CHILD") == "1" {
		mountTmpfs(t, 1<<20, "")
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_REQUIRE_SERVICES=1 and not root: this test runs itself as another user")
		}
		t.Skip("needs root, to run itself as a user who may not mount")
	}
	t.Parallel()
	// A directory nobody may enter (t.TempDir's parent is root's only).
	dir, err := os.MkdirTemp("", "formd-mount")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		require  string
		fails    bool
		contains string
	}{
		{"", false, "SKIP"},
		{"1", true, "mounting a small tmpfs needs root"},
	} {
		cmd := exec.Command(bin, "-test.run=^TestMountTmpfsHonoursRequireServices$", "-test.v")
		cmd.Dir = filepath.Dir(bin)
		cmd.Env = append(os.Environ(), "MOUNT_TMPFS_CHILD=1", "FORMD_REQUIRE_SERVICES="+c.require)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.contains) {
			t.Errorf("as nobody, FORMD_REQUIRE_SERVICES=%q: err %v, output:\n%s\nwant failed=%v and %q", c.require, err, out, c.fails, c.contains)
		}
	}
}

// TestVerifyAndRestoreAgree: a whole backup of a newer release or schema
// than this binary's is refused by CheckRestorable, the one check both
// formd backup verify and Restore make (issue 30: verify passed a
// manifest that restore refused).
func TestVerifyAndRestoreAgree(t *testing.T) {
	ctx := context.Background()
	data := newData(t, 0)
	to := filepath.Join(t.TempDir(), "b")
	if _, err := Take(ctx, Options{Data: data, Drivers: drivers, To: to, Version: "v1.2.0"}); err != nil {
		t.Fatal(err)
	}
	m, err := Verify(ctx, drivers, to)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := m.File(StoreFile)
	known := map[string]int{StoreFile: store.Schema, JournalFile: 1 << 20}
	for _, tc := range []struct {
		name    string
		known   map[string]int
		version string
		refused string
	}{
		{"the same release", known, "v1.2.0", ""},
		{"a newer binary", known, "v1.3.0", ""},
		{"an older binary", known, "v1.1.0", "release"},
		{"an older store schema", map[string]int{StoreFile: store.Schema - 1, JournalFile: 1 << 20}, "v1.2.0", "store.db schema version"},
	} {
		err := CheckRestorable(to, m, tc.known, tc.version)
		var newer *NewerError
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (!errors.As(err, &newer) || newer.What != tc.refused):
			t.Errorf("%s: %v, want a NewerError about the %s", tc.name, err, tc.refused)
		case tc.refused != "":
			// Restore refuses it with the same error, before touching --data.
			restored := filepath.Join(t.TempDir(), "r")
			_, _, rerr := Restore(ctx, RestoreOptions{Drivers: drivers, From: to, Data: restored, Version: tc.version, Known: tc.known,
				Lock: func(string) (func(), error) { return func() {}, nil }})
			if rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("%s: restore says %v, verify's check %v", tc.name, rerr, err)
			}
			if _, serr := os.Stat(restored); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("%s: the refused restore made %s (%v)", tc.name, restored, serr)
			}
		}
	}
}
