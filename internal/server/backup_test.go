package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
)

// TestScheduledBackups runs the server's schedule against a backup
// directory it cannot make: the failures are counted on /metrics and the
// console says so on its pages; once the directory can be made, backups
// succeed, the notice goes, and the newest --backup-keep are kept, each
// whole.
func TestScheduledBackups(t *testing.T) {
	t.Parallel()
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "backups")
	h := servertest.Start(t, "id: fair\nfields: [{name: name, type: text}]\n", servertest.Options{Config: func(c *config.Config) {
		// Below the setting's minimum (1m), which only the flag's check
		// enforces, so the test need not wait.
		c.BackupEvery, c.BackupDir, c.BackupKeep = 20*time.Millisecond, dir, 2
	}})
	poll.Until(t, "a failed backup on /metrics", 20*time.Second, func() bool { return metric(t, h.MetricsURL, "formd_backup_failures_total") > 0 })
	if scrapeNames(t, h.MetricsURL+"/metrics")["formd_backup_last_success_timestamp_seconds"] {
		t.Error("a last success is exported before any backup succeeded")
	}
	c := signedIn(t, h)
	page := consolePage(t, c, h)
	if !strings.Contains(page, "The last scheduled backup failed") || !strings.Contains(page, dir) {
		t.Fatalf("the console does not say the backup failed:\n%s", page)
	}

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a backup to succeed", 20*time.Second, func() bool {
		return scrapeNames(t, h.MetricsURL+"/metrics")["formd_backup_last_success_timestamp_seconds"]
	})
	poll.Until(t, "the console's notice to go", 20*time.Second, func() bool {
		return !strings.Contains(consolePage(t, c, h), "The last scheduled backup failed")
	})
	h.Stop()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a partial backup is left: %s", e.Name())
			continue
		}
		kept++
		if _, err := backup.Verify(context.Background(), server.BackupDrivers(), filepath.Join(dir, e.Name())); err != nil {
			t.Errorf("scheduled backup %s: %v", e.Name(), err)
		}
	}
	if kept < 1 || kept > 2 {
		t.Errorf("%d backups kept, want 1 or 2 (--backup-keep 2)", kept)
	}
}

// TestNoScheduleNoBackupTimestamp: a server without --backup-every
// exports its backup period as 0 and no last-success timestamp, so that
// FormdBackupTooOld has nothing to find old.
func TestNoScheduleNoBackupTimestamp(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: fair\nfields: [{name: name, type: text}]\n", servertest.Options{})
	if scrapeNames(t, h.MetricsURL+"/metrics")["formd_backup_last_success_timestamp_seconds"] {
		t.Error("a server with no schedule exports a last-success timestamp")
	}
	if n := metric(t, h.MetricsURL, "formd_backup_period_seconds"); n != 0 {
		t.Errorf("period %d without a schedule, want 0", n)
	}
}

// signedIn makes an owner and signs in as them: a client with the
// session's cookie.
func signedIn(t *testing.T, h *servertest.Harness) *http.Client {
	t.Helper()
	const email, password = "owner@example.org", "correct horse battery staple"
	if _, err := h.Server.Accounts.AddAccount(context.Background(), accounts.Operator("test"), accounts.NewAccount{
		Email: email, Role: accounts.Owner, Sites: []string{"*"}, Password: password}); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(h.URL+"/admin/login", url.Values{"email": {email}, "password": {password}, "next": {"/admin/forms"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(raw), "Sign out") {
		t.Fatalf("sign in: %d %s", resp.StatusCode, raw)
	}
	return c
}

// consolePage reads the console's forms page.
func consolePage(t *testing.T, c *http.Client, h *servertest.Harness) string {
	t.Helper()
	resp, err := c.Get(h.URL + "/admin/forms")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("console: %d %s", resp.StatusCode, raw)
	}
	return string(raw)
}
