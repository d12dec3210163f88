package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
)

// TestBackupUnderLoad takes a backup with formd backup while writers
// submit to a running formd serve on the same --data — once to the end,
// once with a kill -9 of the server between the store's copy and the
// journal's — restores it into a new directory, starts formd there, and
// checks that every entry acknowledged before the backup began is stored
// exactly once, and that formd audit is clean.
func TestBackupUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs servers; skipped with -short")
	}
	t.Parallel()
	bin := buildFormd(t, t.TempDir())
	for _, kill := range []bool{false, true} {
		name := "served"
		if kill {
			name = "kill -9 in the middle"
		}
		t.Run(name, func(t *testing.T) { backupUnderLoad(t, bin, kill) })
	}
}

func backupUnderLoad(t *testing.T, bin string, kill bool) {
	dir := t.TempDir()
	data, backupDir, restored := filepath.Join(dir, "data"), filepath.Join(dir, "backup"), filepath.Join(dir, "restored")
	formsPath := writeForms(t, dir, crashForms)
	client := loadClient()
	srv := startFormd(t, bin, data, formsPath)

	ppl := newPeople("p-", false)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wait := startClients(ctx, 12, func() { ppl.send(client, srv.url) })
	poll.Until(t, "300 acknowledged submissions", 30*time.Second, func() bool {
		acked, _ := ppl.counts()
		return acked >= 300
	})
	before := ppl.ackedKeys() // acknowledged before the backup began

	out := &watchWriter{on: "copied store.db", do: func() {
		if kill {
			srv.kill9(t)
		}
	}}
	var errb bytes.Buffer
	code := run([]string{"backup", "--data", data, "--to", backupDir}, out, &errb)
	acked, _ := ppl.counts()
	during := acked - len(before)
	if code != 0 {
		t.Fatalf("formd backup exit %d: %s\n%s", code, errb.String(), out.String())
	}
	if !out.seen {
		t.Fatalf("formd backup never said it copied the store:\n%s", out.String())
	}
	t.Logf("backup, %d acknowledged while it ran:\n%s", during, out.String())

	if !kill {
		// A restore into the running server's directory is refused, even
		// with --force.
		var o, e bytes.Buffer
		if code := run([]string{"restore", "--from", backupDir, "--data", data, "--force"}, &o, &e); code == 0 ||
			!strings.Contains(e.String(), "refusing to restore into "+data) || !strings.Contains(e.String(), "another formd serve is running") {
			t.Errorf("restore into a running server's directory: exit %d, %s", code, e.String())
		}
	}
	stop()
	wait()
	if !kill {
		srv.stop(t)
	}

	var vo, ve bytes.Buffer
	if code := run([]string{"backup", "verify", backupDir}, &vo, &ve); code != 0 {
		t.Fatalf("formd backup verify exit %d: %s", code, ve.String())
	}
	var ro, re bytes.Buffer
	if code := run([]string{"restore", "--from", backupDir, "--data", restored}, &ro, &re); code != 0 {
		t.Fatalf("formd restore exit %d: %s\n%s", code, re.String(), ro.String())
	}
	t.Logf("restore:\n%s", ro.String())

	keys := openRestored(t, bin, restored, formsPath, client)
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s stored %d times", k, n)
		}
	}
	for k := range before {
		if keys[k] != 1 {
			t.Errorf("%s was acknowledged before the backup began and is not in the restored data", k)
		}
	}
	t.Logf("%d acknowledged before the backup, %d entries restored", len(before), len(keys))
}

// watchWriter collects output and runs do once, when a line with on is
// written: formd backup prints each file as it is in place.
type watchWriter struct {
	bytes.Buffer
	on   string
	do   func()
	seen bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if !w.seen && strings.Contains(string(p), w.on) {
		w.seen = true
		w.do()
	}
	return n, err
}

// openRestored starts formd on restored data until its journal's backlog
// is decided, then checks that the audit is clean and says how many times
// each key is stored, from the export.
func openRestored(t *testing.T, bin, restored, formsPath string, client *http.Client) map[string]int {
	t.Helper()
	srv2 := startFormd(t, bin, restored, formsPath)
	poll.Until(t, "the restored journal's backlog to drain", 30*time.Second, func() bool { return backlog(client, srv2.metrics) == 0 })
	srv2.stop(t)
	var audit bytes.Buffer
	if code := run([]string{"audit", "--data", restored}, &audit, &audit); code != 0 {
		t.Fatalf("formd audit of the restored data exit %d:\n%s", code, audit.String())
	}
	return exportKeys(t, restored, "crash")
}
