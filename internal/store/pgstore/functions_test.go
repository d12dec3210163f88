package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/release"

	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// A database migrated from nothing has exactly the functions of
// functions.sql, body for body; and a body changed behind the store's back
// is defined again at the next start.
func TestFunctionsSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := pgtest.Defined(t, pgstore.FunctionsSQL())
	if len(want) < 5 {
		t.Fatalf("functions.sql defines %d functions: %v", len(want), slices.Sorted(maps.Keys(want)))
	}
	u := pgtest.URL(t)
	open := func() {
		t.Helper()
		s, err := pgstore.Open(ctx, pgstore.Options{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	open()
	pgtest.SameFunctions(t, "migrated from nothing", pgtest.Functions(t, u), want)

	conn := pgtest.Connect(t, u)
	if _, err := conn.Exec(ctx, `CREATE OR REPLACE FUNCTION formd_claim_uploads(p_id text, p_form text, p_data bytea) RETURNS text
		LANGUAGE sql AS $$ SELECT 'upload-missing' $$`); err != nil {
		t.Fatal(err)
	}
	open()
	pgtest.SameFunctions(t, "reopened after a change behind its back", pgtest.Functions(t, u), want)
}

// functionsSums pins functions.sql by version: a change of the file with
// the same version would let an older binary of that version put its
// bodies back, so the version must be raised (and the new sum added).
var functionsSums = map[int]string{
	1: "c749854d58d2e5479e623e3d42daadba5c245ed47a34bfd42fc516024a37f7df", // the first release that records it
	2: "8879bc787e2c6de049f91bed5244ae2fd31504f7d1e4373228673c435c65b439", // formd_record_posted, formd_decide_entry(p_posted)
}

func TestFunctionsVersionRaised(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(pgstore.FunctionsSQL()))
	v := pgstore.FunctionsVersionOf(pgstore.FunctionsSQL())
	got := hex.EncodeToString(sum[:])
	if want, ok := functionsSums[v]; !ok || want != got {
		t.Fatalf("functions.sql (sha256 %s) carries functions-version %d, pinned to %q: raise the line \"-- functions-version: N\" with every change of the file and add its sum here",
			got, v, want)
	}
	for old := range functionsSums {
		if old > v {
			t.Fatalf("functions-version %d is pinned but the file carries %d: versions only go up", old, v)
		}
	}
}

// In a rolling restart two binaries open one database: one whose
// functions.sql is a version newer than the other's. Whichever starts
// last, the database keeps the newer bodies; the older binary starts and
// uses them, and says so (Functions), and the newer one's start defines
// its own again over the older ones'.
func TestOlderFunctionsNeverReplaceNewer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	older := pgstore.FunctionsSQL()
	v := pgstore.FunctionsVersionOf(older)
	newer := strings.Replace(older, "-- functions-version: "+strconv.Itoa(v), "-- functions-version: "+strconv.Itoa(v+1), 1)
	// A body of the newer release, told apart by a comment inside it.
	newer = strings.Replace(newer, "FROM events WHERE entry_id = p_entry AND type = p_type;", "FROM events WHERE entry_id = p_entry AND type = p_type; -- the newer release", 1)
	if newer == older || pgstore.FunctionsVersionOf(newer) != v+1 {
		t.Fatal("the test's newer functions are not newer: has functions.sql changed its formd_event?")
	}
	wantOlder, wantNewer := pgtest.Defined(t, older), pgtest.Defined(t, newer)
	u := pgtest.URL(t)
	start := func(what, sql string, want pgstore.Functions) {
		t.Helper()
		s, err := pgstore.OpenWithFunctions(ctx, pgstore.Options{URL: u}, sql)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer s.Close()
		got, err := s.Functions(ctx)
		if err != nil || got != want {
			t.Fatalf("%s: functions %+v, %v; want %+v", what, got, err, want)
		}
	}
	start("the older binary on a new database", older, pgstore.Functions{Version: v, Known: v, DefinedBy: release.Name()})
	pgtest.SameFunctions(t, "after the older binary", pgtest.Functions(t, u), wantOlder)
	start("the newer binary", newer, pgstore.Functions{Version: v + 1, Known: v + 1, DefinedBy: release.Name()})
	pgtest.SameFunctions(t, "after the newer binary", pgtest.Functions(t, u), wantNewer)

	start("the older binary again", older, pgstore.Functions{Version: v + 1, Known: v, DefinedBy: release.Name()})
	pgtest.SameFunctions(t, "after the older binary started beside the newer", pgtest.Functions(t, u), wantNewer)
	// The older binary uses the newer bodies: a decision goes through them.
	s, err := pgstore.Open(ctx, pgstore.Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f, err := s.Functions(ctx); err != nil || !f.Newer() {
		t.Fatalf("the older binary does not see newer functions: %+v, %v", f, err)
	}
	if _, err := s.Apply(ctx, []journal.Entry{{Seq: 1, ID: "e1", Form: "f", Site: "s", Key: "k1", Data: []byte(`{}`), ReceivedAt: time.Now()}}); err != nil {
		t.Fatalf("a decision through the newer functions: %v", err)
	}
}
