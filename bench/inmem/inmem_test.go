package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/processor"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (the
// journal's writer, the projector).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const benchForms = "../wrk/bench.yaml"

type rig struct {
	dir string
	j   *sqlitejournal.Journal
	d   *deciding
	f   *form.Form
	h   *form.Hasher
}

func newRig(t *testing.T, capacity int64) *rig {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	j, err := openJournal(ctx, dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	s, _, err := recoverState(ctx, j, "", capacity)
	if err != nil {
		t.Fatal(err)
	}
	forms, err := loadForms(benchForms)
	if err != nil {
		t.Fatal(err)
	}
	h, err := loadHasher(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{dir: dir, j: j, d: &deciding{j: j, s: s, waits: processor.NewNotifier(), log: slog.Default()}, f: forms.Get("bench"), h: h}
}

func (r *rig) entry(t *testing.T, key, name, phone string) journal.Entry {
	t.Helper()
	values := map[string]any{"name": name, "phone": phone, "tickets": json.Number("1")}
	acc, err := r.f.Validate(values, r.h)
	if err != nil {
		t.Fatal(err)
	}
	return journal.Entry{ID: "id-" + key, Form: "bench", Key: key, Fingerprint: acc.Fingerprint, Digest: r.h.Digest("bench", values),
		ReceivedAt: time.UnixMicro(1_700_000_000_000_000), Claims: acc.Claims, Data: acc.Data}
}

// decided appends e and returns the outcome its record carries.
func (r *rig) decided(t *testing.T, e journal.Entry) (string, bool) {
	t.Helper()
	a, err := r.d.Append(context.Background(), e, true)
	if err != nil {
		t.Fatalf("append %s: %v", e.Key, err)
	}
	dec, ok := decisionOf(a.Entry.Data)
	if !ok {
		t.Fatalf("append %s: the record carries no decision: %s", e.Key, a.Entry.Data)
	}
	return dec, a.Duplicate
}

func TestDecisionsAreJournaledWithTheirOutcome(t *testing.T) {
	t.Parallel()
	r := newRig(t, 2)
	for _, c := range []struct {
		key, name, phone string
		want             string
		dup, spam        bool
	}{
		{"k0", "Eve", "+86 139 0000 0001", decSpam, false, true}, // holds no claim
		{"k1", "Ann", "+86 139 0000 0001", decStored, false, false},
		{"k1", "Ann", "+86 139 0000 0001", decStored, true, false}, // a retry: the first record
		{"k2", "Bob", "139 0000 0001", decDuplicate, false, false}, // the same phone, normalized
		{"k3", "Ann", "139 0000 0001", decSameAs, false, false},    // Ann's content under a new key
		{"k4", "Cy", "139 0000 0002", decStored, false, false},
		{"k5", "Di", "139 0000 0003", decRejected, false, false}, // two places, both taken
		{"k6", "Cy", "139 0000 0002", decSameAs, false, false},   // a resend is not turned away as full
	} {
		e := r.entry(t, c.key, c.name, c.phone)
		e.Spam = c.spam
		got, dup := r.decided(t, e)
		if got != c.want || dup != c.dup {
			t.Errorf("%s (%s, %s): %s, duplicate %v; want %s, duplicate %v", c.key, c.name, c.phone, got, dup, c.want, c.dup)
		}
	}
	ctx := context.Background()
	// The state is the journal's: rebuilt from it, and from a snapshot.
	rebuilt, _, err := recoverState(ctx, r.j, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(r.dir, "state.snap")
	if _, err := writeSnapshot(r.d.s, snap); err != nil {
		t.Fatal(err)
	}
	loaded, rec, err := recoverState(ctx, r.j, snap, 2)
	if err != nil || !rec.fromSnapshot || rec.tail != 0 {
		t.Fatalf("recover from the snapshot: %v (%s)", err, rec)
	}
	for name, s := range map[string]*state{"rebuilt": rebuilt, "snapshot": loaded} {
		if len(s.keys) != 7 || len(s.claims) != 2 || s.taken != 2 || s.last != 7 {
			t.Errorf("%s: %d keys, %d claims, %d taken, last %d; want 7, 2, 2, 7", name, len(s.keys), len(s.claims), s.taken, s.last)
		}
		if len(s.claims) == len(r.d.s.claims) {
			for c, h := range r.d.s.claims {
				if s.claims[c] != h {
					t.Errorf("%s: claim %x is %+v, want %+v", name, c, s.claims[c], h)
				}
			}
		}
	}
}

func TestADecisionWaitsForTheAppendItRestsOn(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	s := newState(1, 0)
	a, b := r.entry(t, "a", "Ann", "139 0000 0001"), r.entry(t, "b", "Bob", "139 0000 0001")
	va, err := s.decide(a)
	if err != nil || va.d == nil {
		t.Fatalf("a: %+v, %v", va, err)
	}
	vb, err := s.decide(b)
	if err != nil || vb.wait == nil {
		t.Fatalf("b while a's claim is in flight: %+v, %v; want a wait", vb, err)
	}
	if again, err := s.decide(a); err != nil || again.pending != va.d {
		t.Fatalf("a sent again while its first send is appended: %+v, %v; want that send to wait for", again, err)
	}
	s.abort(va.d) // a's append failed: its claim and its place are b's
	<-vb.wait
	vb, err = s.decide(b)
	if err != nil || vb.d == nil || vb.d.outcome != decStored {
		t.Fatalf("b after a failed: %+v, %v; want stored", vb, err)
	}
	// The last place is in flight: c waits, then is turned away once
	// b's record is durable.
	c := r.entry(t, "c", "Cy", "139 0000 0002")
	vc, err := s.decide(c)
	if err != nil || vc.wait == nil {
		t.Fatalf("c while the last place is in flight: %+v, %v; want a wait", vc, err)
	}
	s.durable(vb.d, 1)
	<-vc.wait
	if vc, err = s.decide(c); err != nil || vc.d == nil || vc.d.outcome != decRejected {
		t.Fatalf("c after b: %+v, %v; want rejected", vc, err)
	}
	// An append whose fate is unknown: what rests on it is refused.
	s.lose(vc.d)
	if _, err := s.decide(c); err != errLost {
		t.Fatalf("a retry of a lost append: %v; want errLost", err)
	}
}

func TestTheProjectionFollowsTheJournal(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	for i := range 50 {
		r.decided(t, r.entry(t, fmt.Sprint("k", i), fmt.Sprint("P", i), fmt.Sprintf("139 0000 %04d", i%40)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := openProjector(ctx, r.j, filepath.Join(r.dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for p.pos.Load() < 50 {
		if err := p.runOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var stored, dups, claims int
	if err := p.db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE status = 'stored'), count(*) FILTER (WHERE status = 'duplicate'),
		(SELECT count(*) FROM claims) FROM entries`).Scan(&stored, &dups, &claims); err != nil {
		t.Fatal(err)
	}
	if stored != 40 || dups != 10 || claims != 40 {
		t.Fatalf("store: %d stored, %d duplicate, %d claims; want 40, 10, 40", stored, dups, claims)
	}
	// A record that breaks the store's unique index is a divergence: the
	// projection stops rather than write it.
	e := r.entry(t, "k0-again", "P", "139 0000 0000")
	e.Seq, e.Data = 51, withDecision(e.Data, decStored)
	if err := p.write(ctx, []journal.Entry{e}); err == nil || !strings.Contains(err.Error(), errDiverged.Error()) {
		t.Fatalf("a second live claim on one phone: %v; want the divergence refused", err)
	}
}

func TestADamagedSnapshotIsNotUsed(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	r.decided(t, r.entry(t, "k1", "Ann", "139 0000 0001"))
	snap := filepath.Join(r.dir, "state.snap")
	if _, err := writeSnapshot(r.d.s, snap); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	b[len(snapshotMagic)+40] ^= 1
	if err := os.WriteFile(snap, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, err := recoverState(context.Background(), r.j, snap, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.fromSnapshot || rec.snapshotError == nil || len(s.keys) != 1 {
		t.Fatalf("%s: from the snapshot %v, %d keys; want the journal alone and 1 key", rec, rec.fromSnapshot, len(s.keys))
	}
}

// TestFormdsIntakeAnswers runs the prototype as it serves: formd's intake
// over the deciding journal.
func TestFormdsIntakeAnswers(t *testing.T) {
	t.Parallel()
	r := newRig(t, 0)
	forms, err := loadForms(benchForms)
	if err != nil {
		t.Fatal(err)
	}
	in := intake.New(r.d, r.d, forms, r.d.waits, intake.Config{DefaultWait: 5 * time.Second, MaxWait: 30 * time.Second, MaxBody: 1 << 20, Hasher: r.h})
	mux := http.NewServeMux()
	in.Register(mux)
	post := func(key, body string) (int, string) {
		req := httptest.NewRequest("POST", "/v1/forms/bench/submissions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		key, body string
		status    int
		has       string
	}{
		{"k1", `{"name":"Ann","phone":"+86 139 0000 0001","tickets":1}`, 201, `"status":"stored"`},
		{"k1", `{"name":"Ann","phone":"+86 139 0000 0001","tickets":1}`, 200, `"status":"stored"`},
		{"k1", `{"name":"Bob","phone":"+86 139 0000 0001","tickets":1}`, 422, "idempotency-key-reused"},
		{"k2", `{"name":"Bob","phone":"139 0000 0001","tickets":1}`, 409, "duplicate-entry"},
		{"k3", `{"name":"Ann","phone":"139 0000 0001","tickets":1}`, 200, `"status":"stored"`},
		{"k4", `{"name":"Cy","phone":"nope","tickets":1}`, 422, "invalid-phone"},
	} {
		status, body := post(c.key, c.body)
		if status != c.status || !strings.Contains(body, c.has) {
			t.Errorf("%s %s: %d %s; want %d with %s", c.key, c.body, status, body, c.status, c.has)
		}
	}
}

// TestConcurrentSendsNeitherDoubleNorOversell sends many people at once,
// several per phone, to a form with fewer places than phones: one live
// entry per phone, never more than the places, and the journal, the
// rebuilt state and the projection agree.
func TestConcurrentSendsNeitherDoubleNorOversell(t *testing.T) {
	t.Parallel()
	const people, phones, places = 400, 40, 25
	r := newRig(t, places)
	entries := make([]journal.Entry, people)
	for i := range entries {
		entries[i] = r.entry(t, fmt.Sprint("k", i), fmt.Sprint("P", i), fmt.Sprintf("139 0000 %04d", i%phones))
	}
	outcomes := make([]string, people)
	var wg sync.WaitGroup
	for i := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := r.d.Append(context.Background(), entries[i], true)
			if err != nil {
				t.Errorf("append %d: %v", i, err)
				return
			}
			outcomes[i], _ = decisionOf(a.Entry.Data)
		}()
	}
	wg.Wait()
	stored := map[string]int{}
	n := 0
	for i, o := range outcomes {
		if o == decStored {
			n++
			stored[entries[i].Claims[0]]++
		}
	}
	if n != places {
		t.Errorf("%d stored; want the %d places taken", n, places)
	}
	for c, k := range stored {
		if k > 1 {
			t.Errorf("claim %s stored %d times", c, k)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rebuilt, _, err := recoverState(ctx, r.j, "", places)
	if err != nil {
		t.Fatal(err)
	}
	if err := same(rebuilt, len(r.d.s.keys), len(r.d.s.claims), r.d.s.taken); err != nil || rebuilt.taken != places {
		t.Errorf("rebuilt: %v, %d taken", err, rebuilt.taken)
	}
	p, err := openProjector(ctx, r.j, filepath.Join(r.dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for p.pos.Load() < people {
		if err := p.runOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var claims int
	if err := p.db.QueryRowContext(ctx, `SELECT count(*) FROM claims`).Scan(&claims); err != nil || claims != places {
		t.Errorf("the projection holds %d claims (%v); want %d", claims, err, places)
	}
}
