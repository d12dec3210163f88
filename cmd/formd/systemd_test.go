package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
)

// TestSystemdNotify runs formd as systemd runs a Type=notify service with
// WatchdogSec=: NOTIFY_SOCKET names a datagram socket the test listens
// on, WATCHDOG_USEC the interval. formd says READY=1 once it serves,
// pings while its journal writer answers, stops pinging while the writer
// is stuck in a commit (another program holds the journal's write lock,
// as a hung disk would hold it), pings again once the lock is gone, and
// says STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 1024)
	go func() {
		defer close(msgs)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	// next waits for a message that has want, returning those before it.
	next := func(want string, within time.Duration) []string {
		t.Helper()
		var before []string
		deadline := time.After(within)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("the socket closed before %q; got %q", want, before)
				}
				if strings.Contains(m, want) {
					return before
				}
				before = append(before, m)
			case <-deadline:
				t.Fatalf("no %q within %s; got %q", want, within, before)
			}
		}
	}

	forms := writeForms(t, dir, "id: club\nfields: [{name: name, type: text, required: true}]\n")
	addr := freeAddrs(t, 1)[0]
	data := filepath.Join(dir, "data")
	logs := &bytes.Buffer{}
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", addr, "--forms", forms, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=400000")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	if before := next("READY=1", 20*time.Second); len(before) != 0 {
		t.Fatalf("before READY=1: %q", before)
	}
	// Ready means serving: /readyz answers at once.
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz after READY=1: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz after READY=1: %d", resp.StatusCode)
	}
	next("WATCHDOG=1", 10*time.Second)
	next("WATCHDOG=1", 10*time.Second)

	// Another program takes the journal's write lock; a submission makes
	// the writer wait for it (up to its busy timeout of 10 s).
	other, err := sqlitedb.OpenWriter(filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(context.Background(), nil) // immediate: the write lock
	if err != nil {
		t.Fatal(err)
	}
	posted := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/v1/forms/club/submissions", "application/json", strings.NewReader(`{"name":"Ann"}`))
		if err != nil {
			posted <- 0
			return
		}
		resp.Body.Close()
		posted <- resp.StatusCode
	}()
	next("STATUS=journal writer not answering", 8*time.Second)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Every message from the stuck status to the first ping after it is
	// a status: no ping while the writer was stuck.
	between := next("WATCHDOG=1", 10*time.Second)
	if len(between) == 0 || !strings.HasPrefix(between[len(between)-1], "STATUS=serving") {
		t.Fatalf("between the stuck writer and the next ping: %q, want the status saying it serves again", between)
	}
	for _, m := range between {
		if !strings.HasPrefix(m, "STATUS=") {
			t.Fatalf("while the writer was stuck formd sent %q", m)
		}
	}
	if code := <-posted; code != 201 {
		t.Fatalf("the submission once the lock was gone: %d\n%s", code, logs)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next("STOPPING=1", 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("formd did not stop cleanly: %v\n%s", err, logs)
	}
}
