package replay_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	j   *sqlitejournal.Journal
	st  *sqlitestore.Store
	new replay.NewProcessor
}

// setup journals n entries of form f (and one of g) and decides only the
// first `decided` of f's, as a store restored from an old backup would.
func setup(t *testing.T, n, decided int) fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var all []journal.Entry
	for i := range n + 1 {
		form := "f"
		if i == n {
			form = "g"
		}
		key := fmt.Sprint("k", i)
		a, err := j.Append(ctx, journal.Entry{ID: "id-" + form + key, Site: "s", Form: form, Key: key,
			Fingerprint: sha256.Sum256([]byte(key)), ReceivedAt: time.Now().UTC(), Data: []byte(`{}`)}, true)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, a.Entry)
	}
	if _, err := st.Apply(ctx, all[:decided]); err != nil {
		t.Fatal(err)
	}
	newProc := func(observe func(store.Outcome)) replay.Processor {
		return processor.New(j, st, processor.NewNotifier(), processor.Options{Observe: observe, MaxAttempts: 1})
	}
	return fixture{j: j, st: st, new: newProc}
}

func TestDryRunThenRunThenAudit(t *testing.T) {
	t.Parallel()
	fx := setup(t, 5, 3)
	ctx := context.Background()
	win := journal.Filter{Form: "f"}

	a, err := replay.Audit(ctx, fx.j, fx.st, win, nil)
	if err != nil || a.Journaled != 5 || a.Decided != 3 || a.Missing != 2 || len(a.MissingSamples) != 2 || a.OK() {
		t.Fatalf("audit before: %+v %v", a, err)
	}
	var seen []replay.Report
	dry, err := replay.Run(ctx, fx.j, fx.st, nil, replay.Options{Filter: win, DryRun: true, Progress: func(r replay.Report) { seen = append(seen, r) }})
	if err != nil || !dry.Done || dry.Read != 5 || dry.Counts["would be restored"] != 2 || dry.Counts["unchanged"] != 3 || len(seen) == 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if _, ok, _ := fx.st.Outcome(ctx, "f", "k4"); ok {
		t.Fatal("a dry run decided an entry")
	}
	run, err := replay.Run(ctx, fx.j, fx.st, fx.new, replay.Options{Filter: win})
	if err != nil || run.Read != 5 || run.Counts["restored as stored"] != 2 || run.Counts["unchanged"] != 3 {
		t.Fatalf("run: %+v %v", run, err)
	}
	again, err := replay.Run(ctx, fx.j, fx.st, fx.new, replay.Options{Filter: win})
	if err != nil || again.Counts["unchanged"] != 5 || len(again.Counts) != 1 {
		t.Fatalf("second run changed something: %+v %v", again, err)
	}
	a, err = replay.Audit(ctx, fx.j, fx.st, win, nil)
	if err != nil || !a.OK() || a.Decided != 5 || a.Statuses["stored"] != 5 {
		t.Fatalf("audit after: %+v %v", a, err)
	}
	// Form g was left alone by a window of form f.
	if _, ok, _ := fx.st.Outcome(ctx, "g", "k5"); ok {
		t.Fatal("the replay of form f decided form g's entry")
	}
}

// eventless is a store that lost the events of some entries (as a store
// that broke the outbox rule would have).
type eventless struct {
	*sqlitestore.Store
	refs []store.EntryRef
}

func (e eventless) EntriesWithoutEvent(_ context.Context, form string, limit int) ([]store.EntryRef, error) {
	var out []store.EntryRef
	for _, r := range e.refs {
		if (form == "" || r.Form == form) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func TestAuditFindsEntriesWithoutTheirEvent(t *testing.T) {
	t.Parallel()
	fx := setup(t, 2, 2)
	var refs []store.EntryRef
	for i := range 25 {
		site := "s"
		if i%5 == 0 {
			site = "other"
		}
		refs = append(refs, store.EntryRef{ID: fmt.Sprint("e", i), Site: site, Form: "f", Key: fmt.Sprint("x", i)})
	}
	st := eventless{Store: fx.st, refs: refs}
	cases := []struct {
		name string
		f    journal.Filter
		want int
		more bool
	}{
		{"form", journal.Filter{Form: "f"}, 20, true},
		{"site", journal.Filter{Site: "other"}, 5, false},
		{"another form", journal.Filter{Form: "g"}, 0, false},
	}
	for _, tc := range cases {
		a, err := replay.Audit(context.Background(), fx.j, st, tc.f, nil)
		if err != nil || len(a.WithoutEvent) != tc.want || a.WithoutEventMore != tc.more || (tc.want > 0 && a.OK()) {
			t.Errorf("%s: %d without event (more %v), ok %v, %v; want %d (more %v)", tc.name, len(a.WithoutEvent), a.WithoutEventMore, a.OK(), err, tc.want, tc.more)
		}
	}
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		since, until, err string
	}{
		{"", "", ""},
		{"2027-03-01T09:00:00+08:00", "2027-03-02T00:00:00Z", ""},
		{"yesterday", "", `since "yesterday" is not an RFC 3339 time`},
		{"", "2027-03-01", `until "2027-03-01" is not an RFC 3339 time`},
	} {
		_, _, err := replay.ParseWindow(tc.since, tc.until)
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && !strings.Contains(got, tc.err)) {
			t.Errorf("%q %q: %v, want %q", tc.since, tc.until, err, tc.err)
		}
	}
}
