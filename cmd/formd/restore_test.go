package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/server"
)

// embeddedData makes a data directory with today's empty store and
// journal and the secret given.
func embeddedData(t *testing.T, dir, secret string) {
	t.Helper()
	cfg := config.Default()
	cfg.Data = dir
	j, st, err := server.OpenDrivers(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(j.Close(), st.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, backup.SecretFile), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStoppedRestore stops a --force restore (as a kill would) after the
// first of the backup's files is moved into --data, so that the directory
// holds some new files and the old ones are aside. formd serve, formd
// audit and formd backup refuse it, each naming formd restore --resume
// and --abort; --resume then makes it the backup's data (and audits it),
// --abort puts back what it held.
func TestStoppedRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	newSecret, oldSecret := strings.Repeat("ab", 32)+"\n", strings.Repeat("cd", 32)+"\n"
	src := filepath.Join(t.TempDir(), "src")
	embeddedData(t, src, newSecret)
	from := filepath.Join(t.TempDir(), "backup")
	var o, e bytes.Buffer
	if code := run([]string{"backup", "--data", src, "--to", from}, &o, &e); code != 0 {
		t.Fatalf("formd backup: %d %s", code, e.String())
	}
	known, err := server.KnownSchemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, finish := range []string{"--resume", "--abort"} {
		t.Run(finish, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			embeddedData(t, data, oldSecret)
			_, _, err := backup.Restore(ctx, backup.RestoreOptions{From: from, Data: data, Force: true, Version: release.Version(), Known: known,
				Drivers: server.BackupDrivers(), Lock: server.LockData,
				Kill: func(step string) bool {
					return strings.HasPrefix(step, "moved ") && strings.HasSuffix(step, " into data")
				}})
			if !errors.Is(err, backup.ErrKilled) {
				t.Fatalf("the restore was not stopped: %v", err)
			}
			for _, args := range [][]string{
				{"serve", "--data", data, "--addr", "127.0.0.1:0", "--metrics-addr", ""},
				{"audit", "--data", data},
				{"backup", "--data", data, "--to", filepath.Join(t.TempDir(), "b")},
			} {
				var o, e bytes.Buffer
				done := make(chan int, 1)
				go func() { done <- run(args, &o, &e) }()
				select {
				case code := <-done:
					if code == 0 || !strings.Contains(e.String(), "formd restore --resume --data "+data) || !strings.Contains(e.String(), "formd restore --abort --data "+data) {
						t.Errorf("formd %s on a half-restored directory: exit %d, %s", args[0], code, e.String())
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("formd %s opened a half-restored directory", args[0])
				}
			}
			o.Reset()
			e.Reset()
			if code := run([]string{"restore", finish, "--data", data}, &o, &e); code != 0 {
				t.Fatalf("formd restore %s: %d %s\n%s", finish, code, e.String(), o.String())
			}
			want := newSecret
			if finish == "--abort" {
				want = oldSecret
			}
			if got, err := os.ReadFile(filepath.Join(data, backup.SecretFile)); err != nil || string(got) != want {
				t.Errorf("after %s the secret is %q (%v), want %q", finish, got, err, want)
			}
			if finish == "--resume" && !strings.Contains(o.String(), "restored: start it with formd serve --data "+data) {
				t.Errorf("formd restore --resume says:\n%s", o.String())
			}
			var ao, ae bytes.Buffer
			if code := run([]string{"audit", "--data", data}, &ao, &ae); code != 0 {
				t.Errorf("formd audit after %s: %d %s\n%s", finish, code, ae.String(), ao.String())
			}
			var ro, re bytes.Buffer
			if code := run([]string{"restore", finish, "--data", data}, &ro, &re); code == 0 || !strings.Contains(re.String(), "no restore into it is unfinished") {
				t.Errorf("formd restore %s again: %d %s", finish, code, re.String())
			}
		})
	}
}
