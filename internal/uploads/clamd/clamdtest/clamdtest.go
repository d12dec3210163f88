// Package clamdtest gives tests a ClamAV daemon: a real one started on a
// socket of its own (FORMD_TEST_CLAMD), or an address nothing listens on.
package clamdtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/uploads/clamd"
)

// EICAR is the EICAR anti-virus test file: harmless, and every scanner
// is to report it. It is put together here so that this source file is
// not itself reported.
var EICAR = []byte(`X5O!P%@AP[4\PZX54(P^)7CC)7}$` + `EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`)

// Running is a running clamd: FORMD_TEST_CLAMD names either a
// socket (unix:///…, tcp://…, or a socket's path) of a clamd with a
// database that knows EICAR, or the clamd binary, which is then started
// on a socket of its own with a database of one signature (the EICAR
// file's MD5, an .hdb file), since there may be no network for
// freshclam. Unset: the test is skipped, unless FORMD_REQUIRE_SERVICES=1.
func Running(t *testing.T) *clamd.Clamd {
	t.Helper()
	v := os.Getenv("FORMD_TEST_CLAMD")
	if v == "" {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_TEST_CLAMD is not set and FORMD_REQUIRE_SERVICES=1: set it to clamd's binary (/usr/sbin/clamd, Debian's clamav-daemon) or socket")
		}
		t.Skip("FORMD_TEST_CLAMD not set (clamd's binary or socket)")
	}
	if strings.Contains(v, "://") {
		c, err := clamd.Parse(v)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if st, err := os.Stat(v); err == nil && st.Mode()&os.ModeSocket != 0 {
		return clamd.New("unix", v, time.Minute)
	}
	return start(t, v)
}

// start runs the clamd binary in the foreground on a temporary
// socket, configuration and database, until the test ends.
func start(t *testing.T, bin string) *clamd.Clamd {
	t.Helper()
	dir, err := os.MkdirTemp("", "formd-clamd-") // short: a socket's path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db := filepath.Join(dir, "db")
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	sig := fmt.Sprintf("%x:%d:Formd.Test.EICAR\n", md5.Sum(EICAR), len(EICAR))
	if err := os.WriteFile(filepath.Join(db, "formd.hdb"), []byte(sig), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "clamd.sock")
	conf := fmt.Sprintf("DatabaseDirectory %s\nLocalSocket %s\nForeground yes\nLogFile %s\nPidFile %s\nTemporaryDirectory %s\n",
		db, sock, filepath.Join(dir, "clamd.log"), filepath.Join(dir, "clamd.pid"), dir)
	if os.Geteuid() == 0 {
		conf += "User root\n" // clamd drops to the clamav user otherwise, who cannot read a root-owned temp dir
	}
	if err := os.WriteFile(filepath.Join(dir, "clamd.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+filepath.Join(dir, "clamd.conf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start clamd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	c := clamd.New("unix", sock, time.Minute)
	poll.UntilNil(t, "clamd to answer on "+sock, 90*time.Second, func() error {
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "clamd.log"))
			t.Fatalf("clamd exited: %v\n%s\n%s", err, out.Bytes(), log)
		default:
		}
		_, err := c.Scan(context.Background(), strings.NewReader("ping"))
		return err
	})
	return c
}

// Down is a clamd address nothing listens on: a real failed
// connection, not a fake scanner.
func Down(t *testing.T) *clamd.Clamd {
	return clamd.New("unix", filepath.Join(t.TempDir(), "no-clamd.sock"), time.Second)
}
