package drivers

import (
	"strings"
	"testing"
)

// TestDriverSettings: the table reads --journal and --store values as
// config did before it, and refuses others naming what would do.
func TestDriverSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		journal, store string
		want           string // drivers, or the error
	}{
		{"sqlite", "sqlite", "sqlite sqlite"},
		{"nats://127.0.0.1:4222", "postgres://u@h/db", "nats postgres"},
		{"tls://nats.example.org:4222", "postgresql://u@h/db", "nats postgres"},
		{"kafka://h", "sqlite", `"kafka://h" is not a journal: use sqlite or a nats:// URL`},
		{"sqlite", "mysql://h", `"mysql://h" is not a store: use sqlite or a postgres:// URL`},
		{"SQLite", "sqlite", `"SQLite" is not a journal`},
	} {
		j, jerr := Journal(tc.journal)
		s, serr := Store(tc.store)
		got := j.Name + " " + s.Name
		if jerr != nil {
			got = jerr.Error()
		} else if serr != nil {
			got = serr.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("--journal %s --store %s: %q, want %q", tc.journal, tc.store, got, tc.want)
		}
	}
}

func TestBackupAdvice(t *testing.T) {
	t.Parallel()
	j, _ := Journal("nats://h")
	s, _ := Store("postgres://h/db")
	sj, _ := Journal("sqlite")
	ss, _ := Store("sqlite")
	for _, tc := range []struct {
		j, s Driver
		want string
	}{
		{j, s, "back up a postgres store with pg_dump or PITR and a nats journal with 'nats stream backup'"},
		{sj, s, "back up a postgres store with pg_dump or PITR"},
		{j, ss, "back up a nats journal with 'nats stream backup'"},
		{sj, ss, ""},
	} {
		if got := BackupAdvice(tc.j, tc.s); got != tc.want {
			t.Errorf("%s journal, %s store: %q, want %q", tc.j.Name, tc.s.Name, got, tc.want)
		}
	}
}
