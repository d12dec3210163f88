package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/client"
	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/powercut"
)

// envOutboxHelper makes the test binary the outbox client of
// TestPowerCut (see TestMain): it submits through client.Client with an
// Outbox, until it is killed.
const envOutboxHelper = "FORMD_TEST_OUTBOX_HELPER"

// envPowerCut, set to 1, runs TestPowerCut.
const envPowerCut = "FORMD_TEST_POWERCUT"

const powerCutForms = crashForms + "---\n" + uploadCrashForms

// TestPowerCut runs formd's embedded tier with --data on a filesystem
// that loses every write not yet fsynced when the power is cut (package
// powercut), and cuts the power soon after its first start, then five
// times under load: submissions to a plain form, uploads (tus) with
// submissions naming them, the Go client's outbox (its directory on
// the same filesystem, in a process of its own), a formd backup and a
// formd restore, each started at a random moment. At a random instant every process is killed with
// SIGKILL and the power is cut; then formd starts again on what was
// synced. After every cut: formd starts and decides its backlog, formd
// audit is clean, every submission acknowledged 2xx and every one the
// outbox said it kept is stored exactly once (uploads with their bytes);
// a backup that formd backup verify accepts holds everything
// acknowledged before it began, and one that had finished before the
// cut is still accepted; a cut restore is finished or refused clearly,
// and finished with formd restore --resume.
//
// It mounts a filesystem (root, /dev/fuse) and takes about a minute, so
// it runs when FORMD_TEST_POWERCUT=1, as in .ci/run's power-cut step.
func TestPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds formd and cuts the power under it; skipped with -short")
	}
	if os.Getenv(envPowerCut) != "1" {
		t.Skipf("set %s=1 to cut the power under formd (it needs root and /dev/fuse; .ci/run's power-cut step sets it)", envPowerCut)
	}
	f := powercut.MountTest(t)
	mnt := f.Mountpoint()
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	formsPath := writeForms(t, dir, powerCutForms)
	data := filepath.Join(mnt, "data")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)

	// A backup to restore from, off the cut filesystem: the restores
	// under test write to it, they do not read from it.
	srv := startFormd(t, bin, data, formsPath)
	l := &powerLoad{t: t, hc: hc, acked: map[string]bool{}, files: map[string][32]byte{}}
	ctx, stop := context.WithCancel(context.Background())
	l.run(ctx, srv.url)
	poll.Until(t, "50 acknowledged submissions", 60*time.Second, func() bool { return l.count() >= 50 })
	base := filepath.Join(dir, "base")
	if out, err := exec.Command(bin, "backup", "--data", data, "--to", base, "--log-level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("the base backup: %v\n%s", err, out)
	}
	// The first cut: the server's first start made its --data, and
	// nothing else has synced the directory above it since.
	srv.cmd.Process.Signal(syscall.SIGKILL)
	srv.cmd.Wait()
	stop()
	l.wg.Wait()
	if err := f.Cut(); err != nil {
		t.Fatalf("the first cut: %v", err)
	}
	_, _, undone := f.Stats()
	if err := f.Remount(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut 0 (soon after the first start): %d plain and %d file submissions acknowledged; %d changes undone by the cut", len(l.snapshot()), len(l.fileSnapshot()), undone)
	srv = startFormd(t, bin, data, formsPath)
	poll.Until(t, "the journal's backlog to drain", 60*time.Second, func() bool { return backlog(hc, srv.metrics) == 0 })
	srv.stop(t)
	checkStored(t, bin, data, l.snapshot(), l.fileSnapshot(), nil)
	if t.Failed() {
		t.FailNow()
	}
	srv = startFormd(t, bin, data, formsPath)

	// What every restore of base holds, restored once off the cut
	// filesystem.
	var ro, re bytes.Buffer
	if code := run([]string{"restore", "--from", base, "--data", filepath.Join(dir, "base-restored")}, &ro, &re); code != 0 {
		t.Fatalf("restore the base backup: exit %d: %s", code, re.String())
	}
	baseKeys := exportKeys(t, filepath.Join(dir, "base-restored"), "crash")

	// Two levels, both made by the outbox: the backups' directory syncs
	// the mount's root, and with it a first level, but not the second.
	outboxDir := filepath.Join(mnt, "client", "outbox")
	const cuts = 5              // and the first
	kept := map[string]string{} // keys the outbox said it kept durably: what the client was told of each
	lost, backupsCut, restoresCut := undone, 0, 0
	for round := 1; round <= cuts; round++ {
		ctx, stop := context.WithCancel(context.Background())
		l.run(ctx, srv.url)
		outbox := startOutbox(t, srv.url, outboxDir, round)

		// The backup and the restore start at random moments; the cut
		// comes at a random instant after both began.
		wait(ctx, time.Duration(100+mrand.IntN(500))*time.Millisecond)
		before := l.snapshot()
		backupDir := filepath.Join(mnt, "backups", fmt.Sprintf("b%d", round))
		backup := startCmd(t, bin, "backup", "--data", data, "--to", backupDir, "--log-level", "warn")
		wait(ctx, time.Duration(mrand.IntN(300))*time.Millisecond)
		restoreDir := filepath.Join(mnt, "restores", fmt.Sprintf("r%d", round))
		restore := startCmd(t, bin, "restore", "--from", base, "--data", restoreDir, "--log-level", "warn")
		// The first cut comes while the backup copies its files, the
		// second early in the restore, the fourth just after the
		// restore finished and the fifth just after the backup did
		// (what they wrote must be durable), the third at a random
		// instant.
		why := "a random instant"
		switch round {
		case 4, 5:
			c, what := restore, "restore"
			if round == 5 {
				c, what = backup, "backup"
			}
			select {
			case <-c.done:
				why = "just after the " + what + " ended"
			case <-time.After(60 * time.Second):
				why = "the " + what + " never ended"
			}
			wait(ctx, time.Duration(mrand.IntN(100))*time.Millisecond)
		case 1:
			select {
			case <-backup.saw("copied "):
				why = "the backup copying"
			case <-time.After(20 * time.Second):
				why = "the backup never said it copied a file"
			}
		case 2:
			wait(ctx, time.Duration(mrand.IntN(100))*time.Millisecond)
			why = "early in the restore"
		default:
			wait(ctx, time.Duration(200+mrand.IntN(1500))*time.Millisecond)
		}

		// The cut: every process dies at once, then what was not
		// synced is lost.
		for _, c := range []*exec.Cmd{srv.cmd, backup.cmd, restore.cmd, outbox.cmd} {
			c.Process.Signal(syscall.SIGKILL)
		}
		srv.cmd.Wait()
		outbox.cmd.Wait()
		stop()
		l.wg.Wait()
		maps.Copy(kept, outbox.done())
		backupDone, restoreDone := backup.finished(), restore.finished()
		cutFS := f.Cut()
		syncs, pending, undone := f.Stats()
		if cutFS != nil {
			t.Fatalf("cut %d: %v", round, cutFS)
		}
		if err := f.Remount(); err != nil {
			t.Fatalf("remount after cut %d: %v", round, err)
		}
		lost += undone
		backupsCut += boolInt(!backupDone)
		restoresCut += boolInt(!restoreDone)
		t.Logf("cut %d (%s): %d plain and %d file submissions acknowledged, %d kept by the outbox; backup finished: %v, restore finished: %v; %d fsyncs, %d changes recorded, %d undone by the cut",
			round, why, len(l.snapshot()), len(l.fileSnapshot()), len(kept), backupDone, restoreDone, syncs, pending, undone)

		// formd starts on what was synced and decides its backlog; the
		// outbox sends what it kept.
		srv = startFormd(t, bin, data, formsPath)
		resumeOutbox(t, srv.url, outboxDir, kept)
		poll.Until(t, "the journal's backlog to drain", 60*time.Second, func() bool { return backlog(hc, srv.metrics) == 0 })
		srv.stop(t)
		checkStored(t, bin, data, l.snapshot(), l.fileSnapshot(), kept)

		checkBackup(t, bin, dir, formsPath, backupDir, before, backupDone, hc)
		checkRestore(t, bin, base, restoreDir, restoreDone, baseKeys)
		if t.Failed() {
			t.FailNow()
		}
		srv = startFormd(t, bin, data, formsPath)
	}
	srv.stop(t)
	if lost == 0 || backupsCut == 0 || restoresCut == 0 || len(kept) == 0 || len(l.fileSnapshot()) == 0 {
		t.Fatalf("the cuts undid %d changes and cut %d backups and %d restores mid-way; %d submissions were kept by the outbox, %d file submissions acknowledged: the test proved less than it says",
			lost, backupsCut, restoresCut, len(kept), len(l.fileSnapshot()))
	}
	t.Logf("%d cuts undid %d changes; %d backups and %d restores were cut mid-way", cuts+1, lost, backupsCut, restoresCut)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wait waits d, or less if ctx ends (the random moments of the test).
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// powerLoad submits to the plain form and uploads files, from the test
// process, and remembers what was acknowledged.
type powerLoad struct {
	t     *testing.T
	hc    *http.Client
	wg    sync.WaitGroup
	mu    sync.Mutex
	next  int
	acked map[string]bool     // plain form: keys answered 2xx
	files map[string][32]byte // files form: key answered 2xx → the file's SHA-256
}

func (l *powerLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked) + len(l.files)
}

func (l *powerLoad) snapshot() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.acked))
	for k := range l.acked {
		m[k] = true
	}
	return m
}

func (l *powerLoad) fileSnapshot() map[string][32]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string][32]byte, len(l.files))
	for k, v := range l.files {
		m[k] = v
	}
	return m
}

func (l *powerLoad) person() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return l.next
}

// run starts the submitters until ctx ends.
func (l *powerLoad) run(ctx context.Context, base string) {
	for range 6 {
		l.wg.Go(func() {
			for ctx.Err() == nil {
				p := l.person()
				key := fmt.Sprintf("plain-%d", p)
				if status := submit(l.hc, base, key, p); status >= 200 && status < 300 {
					l.mu.Lock()
					l.acked[key] = true
					l.mu.Unlock()
				}
			}
		})
	}
	u := uploader{c: l.hc, base: base}
	for range 2 {
		l.wg.Go(func() {
			var creations atomic.Int64
			for ctx.Err() == nil {
				p := l.person()
				body := make([]byte, 40<<10+mrand.IntN(160<<10))
				rand.Read(body)
				copy(body, "%PDF-1.4\n")
				id, err := u.send(ctx, body, &creations)
				if err != nil {
					continue
				}
				key := fmt.Sprintf("file-%d", p)
				if code, err := u.submit(ctx, key, p, id); err == nil && code >= 200 && code < 300 {
					l.mu.Lock()
					l.files[key] = sha256.Sum256(body)
					l.mu.Unlock()
				}
			}
		})
	}
}

// bgCmd is a formd command run in the background, to be killed.
type bgCmd struct {
	cmd  *exec.Cmd
	out  *sawWriter
	done chan struct{}
	err  error
}

// sawWriter keeps a command's output and says when a string appeared.
type sawWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiting map[string]chan struct{}
}

func (w *sawWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for s, ch := range w.waiting {
		if strings.Contains(w.buf.String(), s) {
			close(ch)
			delete(w.waiting, s)
		}
	}
	return len(p), nil
}

// saw is closed once s is in the command's output.
func (c *bgCmd) saw(s string) <-chan struct{} {
	w := c.out
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(w.buf.String(), s) {
		close(ch)
		return ch
	}
	w.waiting[s] = ch
	return ch
}

func startCmd(t *testing.T, bin string, args ...string) *bgCmd {
	t.Helper()
	c := &bgCmd{cmd: exec.Command(bin, args...), out: &sawWriter{waiting: map[string]chan struct{}{}}, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.cmd.Process.Kill(); <-c.done }) // a test that failed before the cut
	return c
}

// finished says whether the command ended by itself with exit 0 (it is
// asked after the kill, once it has ended either way).
func (c *bgCmd) finished() bool {
	<-c.done
	return c.err == nil
}

// outboxProc is the outbox helper process.
type outboxProc struct {
	cmd   *exec.Cmd
	lines chan string
}

// startOutbox runs this test binary as the outbox client (TestMain,
// outboxHelper); each key it prints is kept in its outbox.
func startOutbox(t *testing.T, base, dir string, round int) *outboxProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOutboxHelper+"="+base+"|"+dir+"|"+fmt.Sprint(round))
	// A pipe of our own, not StdoutPipe: Wait would close that before
	// every line is read.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	p := &outboxProc{lines: make(chan string, 1<<16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		out.Close()
		close(p.lines)
	}()
	p.cmd = cmd
	return p
}

// done drains what the helper printed (after it was killed): the keys
// it kept, each with what the server told of it before the cut.
func (p *outboxProc) done() map[string]string {
	m := map[string]string{}
	for line := range p.lines {
		if k, ok := strings.CutPrefix(line, "kept "); ok {
			m[k] = "no answer before the cut"
		} else if rest, ok := strings.CutPrefix(line, "told "); ok {
			k, told, _ := strings.Cut(rest, " ")
			m[k] = "told " + told + " before the cut"
		}
	}
	return m
}

// outboxHelper is the outbox client process: env holds the server's
// URL, the outbox directory and the round. It prints "kept KEY" once the
// outbox holds KEY durably (the client's first send follows the
// outbox's Put) and "told KEY WHAT" once Submit returns (the outcome and
// its HTTP status, or the error), and submits until it is killed.
func outboxHelper(env string) int {
	parts := strings.SplitN(env, "|", 3)
	ob, err := client.OpenOutbox(parts[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "outbox helper:", err)
		return 1
	}
	var mu sync.Mutex
	c, err := client.New(parts[0], client.Options{Outbox: ob, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second,
		OnEvent: func(e client.Event) {
			if e.Type == client.EventSend && e.Attempt == 1 {
				mu.Lock()
				fmt.Printf("kept %s\n", e.Key)
				mu.Unlock()
			}
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "outbox helper:", err)
		return 1
	}
	var round int
	fmt.Sscan(parts[2], &round)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				// Phones of their own: 1390xxxxxxx is the plain load's.
				p := 50_000_000 + round*1_000_000 + g*100_000 + i
				s := client.Submission{Form: "crash", Key: fmt.Sprintf("outbox-%d", p),
					Body: json.RawMessage(fmt.Sprintf(`{"name":"Person %d","phone":"139%08d"}`, p, p))}
				r, err := c.Submit(context.Background(), s)
				mu.Lock()
				if err != nil {
					fmt.Printf("told %s error:%q\n", s.Key, err.Error())
				} else {
					fmt.Printf("told %s %s/%d\n", s.Key, r.Outcome, r.HTTPStatus)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// resumeOutbox sends what the outbox kept, as a client does on its
// next start, and adds what the server told of each key it sent to told
// (the keys the outbox kept).
func resumeOutbox(t *testing.T, base, dir string, told map[string]string) {
	t.Helper()
	ob, err := client.OpenOutbox(dir)
	if err != nil {
		t.Fatalf("open the outbox after the cut: %v", err)
	}
	c, err := client.New(base, client.Options{Outbox: ob, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results, err := c.Resume(ctx)
	if err != nil {
		t.Fatalf("resume the outbox after the cut: %v", err)
	}
	for _, r := range results {
		told[r.Key] += fmt.Sprintf("; resumed: %s/%d", r.Outcome, r.HTTPStatus)
	}
}

// checkStored stops nothing: formd is stopped. It audits data and checks
// every acknowledged or kept key is stored exactly once, files with
// their bytes.
func checkStored(t *testing.T, bin, data string, acked map[string]bool, files map[string][32]byte, kept map[string]string) {
	t.Helper()
	var audit bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &audit, &audit); code != 0 {
		t.Fatalf("formd audit after the cut: exit %d\n%s", code, audit.String())
	}
	plain := exportKeys(t, data, "crash")
	for k, n := range plain {
		if n != 1 {
			t.Errorf("key %s stored %d times", k, n)
		}
	}
	for k := range acked {
		if plain[k] != 1 {
			t.Errorf("%s was acknowledged and is stored %d times after the cut", k, plain[k])
		}
	}
	for k, told := range kept {
		if plain[k] != 1 {
			t.Errorf("%s was kept by the client's outbox (%s) and is stored %d times after the cut", k, told, plain[k])
		}
	}
	got := map[string][]exportedFile{}
	for _, row := range exportFiles(t, bin, data) {
		got[row.Key] = append(got[row.Key], row.Data.Scan)
	}
	for k, sum := range files {
		fs := got[k]
		if len(fs) != 1 {
			t.Errorf("upload %s was acknowledged and is stored %d times after the cut", k, len(fs))
			continue
		}
		if fs[0].SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: the file is recorded as %s, sent %x", k, fs[0].SHA256, sum)
		}
		b, err := readUpload(data, fs[0].uploadID())
		if err != nil || sha256.Sum256(b) != sum {
			t.Errorf("%s: the file's bytes after the cut are not the bytes sent (%v)", k, err)
		}
	}
}

// checkBackup: a backup that verify accepts is complete — restored, it
// is audited clean and holds what was acknowledged before it began; a
// backup that finished before the cut must still be accepted.
func checkBackup(t *testing.T, bin, dir, formsPath, backupDir string, before map[string]bool, finished bool, hc *http.Client) {
	t.Helper()
	var vo, ve bytes.Buffer
	code := run([]string{"backup", "verify", backupDir}, &vo, &ve)
	if code != 0 {
		if finished {
			t.Errorf("formd backup had finished before the cut; after it, backup verify refuses it: %s", ve.String())
		}
		if strings.TrimSpace(ve.String()) == "" {
			t.Errorf("backup verify refused a cut backup without saying why")
		}
		t.Logf("backup verify refuses the cut backup: %s", strings.TrimSpace(ve.String()))
		return
	}
	restored := filepath.Join(dir, "verified-"+filepath.Base(backupDir))
	var ro, re bytes.Buffer
	if code := run([]string{"restore", "--from", backupDir, "--data", restored}, &ro, &re); code != 0 {
		t.Errorf("backup verify accepts %s, restore of it: exit %d: %s", backupDir, code, re.String())
		return
	}
	keys := openRestored(t, bin, restored, formsPath, hc)
	for k := range before {
		if keys[k] != 1 {
			t.Errorf("backup verify accepts %s (finished: %v), and %s, acknowledged before it began, is stored %d times in it", backupDir, finished, k, keys[k])
		}
	}
}

// checkRestore: a restore cut mid-way is finished or refused clearly by
// the same command again, and finished with --resume; what it restored
// is audited clean.
func checkRestore(t *testing.T, bin, base, restoreDir string, finished bool, baseKeys map[string]int) {
	t.Helper()
	defer func() {
		// Whole: what the backup holds, each entry once.
		keys := exportKeys(t, restoreDir, "crash")
		for k := range baseKeys {
			if keys[k] != 1 {
				t.Errorf("%s is in the backup and stored %d times in its restore (finished before the cut: %v)", k, keys[k], finished)
			}
		}
		if len(keys) != len(baseKeys) {
			t.Errorf("the restore (finished before the cut: %v) holds %d entries, the backup %d", finished, len(keys), len(baseKeys))
		}
	}()
	// A cut between the restore's last durable step (its RESTORING marker
	// removed) and its process's exit finished the restore though the
	// process never said so: the directory, not the exit, says which.
	if !finished {
		_, err := os.Stat(filepath.Join(restoreDir, backup.RestoringFile))
		if errors.Is(err, fs.ErrNotExist) && restoreHoldsData(restoreDir) {
			t.Logf("the restore was cut after its last step and before its exit: it is whole")
			finished = true
		}
	}
	if finished {
		var audit bytes.Buffer
		if code := run([]string{"audit", "--data", restoreDir}, &audit, &audit); code != 0 {
			t.Errorf("formd restore had finished before the cut; the audit after it: exit %d\n%s", code, audit.String())
		}
		return
	}
	out, err := exec.Command(bin, "restore", "--from", base, "--data", restoreDir, "--log-level", "warn").CombinedOutput()
	if err != nil {
		if len(bytes.TrimSpace(out)) == 0 {
			t.Errorf("a restore again after a cut one fails without saying why (%v)", err)
		}
		t.Logf("a restore again after the cut one refuses: %s", bytes.TrimSpace(out))
		// A cut restore leaves its RESTORING marker: the refusal names
		// --resume, which finishes it from the marker's own record.
		if !bytes.Contains(out, []byte("--resume")) {
			t.Errorf("the refusal of a restore after a cut one does not name formd restore --resume: %s", out)
		}
		out, err = exec.Command(bin, "restore", "--resume", "--data", restoreDir, "--log-level", "warn").CombinedOutput()
		if err != nil {
			t.Errorf("formd restore --resume after a cut restore: %v\n%s", err, out)
			return
		}
	}
	var audit bytes.Buffer
	if code := run([]string{"audit", "--data", restoreDir}, &audit, &audit); code != 0 {
		t.Errorf("the audit of a restore finished after a cut: exit %d\n%s", code, audit.String())
	}
}

// restoreHoldsData says whether a restore's directory holds a store: a
// restore cut before it wrote anything holds none (and no marker either).
func restoreHoldsData(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "store.db"))
	return err == nil
}
