package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l := NewLoader(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return l.Load()
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := Default()
	if c.Addr != "127.0.0.1:8080" || c.Data != "./formd-data" || c.Journal != "sqlite" || c.Store != "sqlite" ||
		c.DefaultWait != 5*time.Second || c.MaxBody != 1<<20 || c.Workers != 1 || c.RateLimit.Requests != 600 || c.RateLimit.Burst != 600 ||
		c.PostgresMaxConns != 16 || c.SQLiteReaders != 8 || c.PlacesTTL != time.Second {
		t.Fatalf("defaults %+v", c)
	}
}

// Flags beat the environment, which beats the file, which beats defaults.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "formd.yaml")
	os.WriteFile(file, []byte("addr: 127.0.0.1:1111\ndata: /from/file\nwait: 2s\nmax-body: 512KiB\n"), 0o600)
	c, err := load(t, []string{"--config", file, "--addr", "127.0.0.1:3333"},
		map[string]string{"FORMD_ADDR": "127.0.0.1:2222", "FORMD_DATA": "/from/env", "FORMD_RATE_LIMIT": "off"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:3333" || c.Data != "/from/env" || c.DefaultWait != 2*time.Second || c.MaxBody != 512<<10 || !c.RateLimit.Off {
		t.Fatalf("config %+v", c)
	}
}

func TestErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--max-body", "lots"}, nil, `setting max-body (--max-body, FORMD_MAX_BODY; from --max-body): "lots" is not a size`},
		{nil, map[string]string{"FORMD_WAIT": "forever"}, `setting wait (--wait, FORMD_WAIT; from FORMD_WAIT): "forever" is not a duration`},
		{[]string{"--store", "mysql://x"}, nil, `"mysql://x" is not a store: use sqlite or a postgres:// URL`},
		{[]string{"--rate-limit", "fast"}, nil, "is not a rate limit: write N/DURATION"},
		{[]string{"--addr", "8080"}, nil, "is not host:port"},
		{[]string{"--wait", "40s"}, nil, "max-wait (30s) is below wait (40s)"},
		{[]string{"--trusted-proxies", "10.0.0.0/8,nonsense"}, nil, `"nonsense" is not a CIDR`},
		{[]string{"--postgres-max-conns", "0"}, nil, `setting postgres-max-conns (--postgres-max-conns, FORMD_POSTGRES_MAX_CONNS; from --postgres-max-conns): "0" is not a whole number from 1 to 1000`},
		{nil, map[string]string{"FORMD_SQLITE_READERS": "many"}, `setting sqlite-readers (--sqlite-readers, FORMD_SQLITE_READERS; from FORMD_SQLITE_READERS): "many" is not a whole number from 1 to 256`},
		{[]string{"--places-ttl", "1h"}, nil, `setting places-ttl (--places-ttl, FORMD_PLACES_TTL; from --places-ttl): "1h" is not a duration from 0s to 1m`},
		{[]string{"--upload-expiry", "5s"}, nil, `setting upload-expiry (--upload-expiry, FORMD_UPLOAD_EXPIRY; from --upload-expiry): "5s" is not a duration from 1m to 720h`},
		{[]string{"--backup-every", "1h"}, nil, "setting backup-every needs backup-dir"},
		{nil, map[string]string{"FORMD_BACKUP_EVERY": "10s", "FORMD_BACKUP_DIR": "/b"}, "backup-every (10s) is below 1m"},
		{[]string{"--backup-every", "1h", "--backup-dir", "/b", "--store", "postgres://db/x"}, nil, "back up a postgres store with pg_dump"},
		{[]string{"--backup-keep", "0"}, nil, `"0" is not a whole number from 1`},
	}
	for _, tc := range cases {
		_, err := load(t, tc.args, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestUnknownFileKey(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "formd.yaml")
	os.WriteFile(file, []byte("adress: x\n"), 0o600)
	_, err := load(t, []string{"--config", file}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown setting "adress"; valid: `) || !strings.Contains(err.Error(), " addr, ") {
		t.Fatalf("err = %v", err)
	}
}
