package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/uploads"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/jackc/pgx/v5"
)

// fixtureDir holds the data directories written by earlier releases
// (testdata/upgrade/make.sh made them, one archive per commit, and one
// more per commit with the store in PostgreSQL, kept as a pg_dump).
const fixtureDir = "../../testdata/upgrade"

// upgradeFixture is expected.json of a fixture (testdata/upgrade/gen).
type upgradeFixture struct {
	Commit   string `json:"commit"`
	Webhooks bool   `json:"webhooks"`
	Capacity int    `json:"capacity"`
	Entries  []struct {
		Form  string            `json:"form"`
		Key   string            `json:"key"`
		Data  map[string]string `json:"data"`
		First struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		} `json:"first"`
		Status string `json:"status"`
	} `json:"entries"`
	Undecided []string `json:"undecided"`
	// Files are the files of the upgrade-files entries (releases with
	// uploads; testdata/upgrade/gen's File).
	Files []struct {
		Key    string `json:"key"`
		Field  string `json:"field"`
		Upload string `json:"upload"`
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
		First  struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		} `json:"first"`
	} `json:"files"`
}

// TestUpgradeFromEarlierReleases opens each data directory an earlier
// release wrote with today's defaults (the embedded fast path on) and
// checks the promise held across the upgrade: every entry is there with
// its status, an old key is answered with its first body byte for byte,
// an old participant is still one, the entries the old release journaled
// and did not decide are decided, a new entry is counted against the old
// capacity, the deliveries pending are still pending, and the audit is
// clean.
func TestUpgradeFromEarlierReleases(t *testing.T) {
	t.Parallel()
	archives, err := filepath.Glob(filepath.Join(fixtureDir, "*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) < 6 {
		t.Fatalf("%d fixtures in %s, want two per earlier release (run testdata/upgrade/make.sh)", len(archives), fixtureDir)
	}
	for _, archive := range archives {
		name := strings.TrimSuffix(filepath.Base(archive), ".tar.gz")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storeURL := "sqlite"
			if strings.HasSuffix(name, "-postgres") {
				storeURL = pgtest.URL(t)
			}
			dir := t.TempDir()
			untar(t, archive, dir)
			if storeURL != "sqlite" {
				loadDump(t, storeURL, filepath.Join(dir, "store.sql"), "formd_upgrade_"+strings.TrimSuffix(name, "-postgres"))
			}
			fx := readFixture(t, dir)
			checkUpgrade(t, filepath.Join(dir, "data"), storeURL, fx)
		})
	}
}

func checkUpgrade(t *testing.T, data, storeURL string, fx upgradeFixture) {
	ctx := context.Background()
	var (
		j  journal.Journal
		st server.Store
	)
	h := servertest.Start(t, "", servertest.Options{
		Data: data,
		Config: func(c *config.Config) {
			c.Store = storeURL
			// As the old release ran: its endpoint is on loopback.
			c.WebhookAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		},
		WrapJournal: func(x journal.Journal) journal.Journal { j = x; return x },
		WrapStore:   func(x server.Store) server.Store { st = x; return x },
	})
	if ss, ok := st.(*sqlitestore.Store); storeURL == "sqlite" && (!ok || !ss.Shared()) {
		t.Fatal("the store is not on the shared writer: the upgrade is tested with today's defaults (the embedded fast path)")
	}
	if storeURL != "sqlite" {
		// The old release's functions are today's, those of functions.sql.
		pgtest.SameFunctions(t, "upgraded from "+fx.Commit, pgtest.Functions(t, storeURL), pgtest.Defined(t, pgstore.FunctionsSQL()))
	}

	// What the old release journaled and did not decide is decided.
	for _, key := range fx.Undecided {
		poll.UntilNil(t, "the old release's undecided "+key+" decided", 30*time.Second, func() error {
			o, ok, err := st.Outcome(ctx, "upgrade-burst", key)
			switch {
			case err != nil:
				return err
			case !ok:
				return errors.New("no outcome")
			case o.Status != "stored":
				t.Fatalf("undecided %s: %s, want stored", key, o.Status)
			}
			return nil
		})
	}

	// The forms the old release stored are each's first version, their
	// definition as stored: made by migration 0071 for a release before
	// it ("upgrade"), by the release's own forms apply after it.
	if vs, err := st.FormVersions(ctx, "upgrade-fair"); err != nil || len(vs) != 1 || vs[0].N != 1 || (vs[0].Action != "upgrade" && vs[0].Action != "forms.apply") {
		t.Errorf("versions of the old release's form: %+v %v, want its definition as version 1", vs, err)
	} else if v, err := st.FormVersion(ctx, "upgrade-fair", 1); err != nil || !bytes.Contains(v.Source, []byte("upgrade-fair")) {
		t.Errorf("version 1 of the old release's form: %q %v", v.Source, err)
	}

	statuses := map[string]string{}
	if err := st.Export(ctx, "upgrade-fair", func(r store.Row) error { statuses[r.Key] = r.Status; return nil }); err != nil {
		t.Fatal(err)
	}
	post := func(key string, body map[string]string) (int, http.Header, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/upgrade-fair/submissions", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := servertest.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(got)
	}
	for _, e := range fx.Entries {
		if got := statuses[e.Key]; got != e.Status {
			t.Errorf("%s: status %q, want %q as the old release left it", e.Key, got, e.Status)
		}
		code, hdr, body := post(e.Key, e.Data)
		want := e.First.Status
		if want == 201 {
			want = 200
		}
		if code != want || body != e.First.Body || hdr.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry of %s: %d %s (replayed %q)\nwant %d with the first body byte for byte: %s", e.Key, code, body, hdr.Get("Idempotent-Replayed"), want, e.First.Body)
		}
	}

	// The old participant is still one: Ann under a new key, with other
	// content, is a duplicate.
	if code, _, body := post("ann-after-upgrade", map[string]string{"name": "Ann Other", "email": "Ann@Example.org"}); code != 409 || !strings.Contains(body, "duplicate-entry") {
		t.Errorf("the old participant under a new key: %d %s, want 409 duplicate-entry", code, body)
	}
	// Places taken before the upgrade still count: the form is full.
	if code, _, body := post("new-after-upgrade", map[string]string{"name": "Fay", "email": "fay@example.org"}); code != 201 || !strings.Contains(body, `"waitlisted"`) {
		t.Errorf("a new participant with the %d places taken: %d %s, want 201 waitlisted", fx.Capacity, code, body)
	}
	// An entry the old release left undecided holds its participant for
	// today's submissions too: a new key with its value is a duplicate.
	if len(fx.Undecided) > 0 {
		key := fx.Undecided[0]
		n := strings.TrimLeft(strings.TrimPrefix(key, "burst-"), "0")
		if n == "" {
			n = "0"
		}
		b, _ := json.Marshal(map[string]string{"n": n})
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/upgrade-burst/submissions", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "burst-again")
		resp, err := servertest.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		poll.UntilNil(t, "the resend of "+key+"'s participant decided", 30*time.Second, func() error {
			o, ok, err := st.Outcome(ctx, "upgrade-burst", "burst-again")
			switch {
			case err != nil:
				return err
			case !ok:
				return errors.New("no outcome")
			case o.Status != "duplicate":
				t.Fatalf("a new key for the participant of %s, left undecided by the old release: %s, want duplicate", key, o.Status)
			}
			return nil
		})
	}
	if fx.Webhooks {
		ds, err := st.DeliveryStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Pending == 0 {
			t.Errorf("deliveries %+v: the old release's pending deliveries are gone", ds)
		}
	}
	rep, err := replay.Audit(ctx, j, st, journal.Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("audit after the upgrade: %+v", rep)
	}
	checkUpgradedFiles(t, h, st, data, fx)
	checkUpgradedOptionPlaces(t, st)
}

// checkUpgradedOptionPlaces: an upgraded store (migration 0074) decides a
// form whose sessions have places of their own.
func checkUpgradedOptionPlaces(t *testing.T, st server.Store) {
	ctx := context.Background()
	one := 1
	if err := st.PutForms(ctx, []form.Record{{ID: "upgrade-sessions", Site: "default", Source: []byte("id: upgrade-sessions"),
		WhenFull: form.WhenFullReject, PlaceField: "session", Places: []form.OptionPlaces{{Value: "morning", Capacity: &one}}}}); err != nil {
		t.Fatal(err)
	}
	entry := func(key string) journal.Entry {
		return journal.Entry{ID: "upgrade-sessions-" + key, Seq: 1, Site: "default", Form: "upgrade-sessions", Key: key,
			ReceivedAt: time.Now().UTC().Truncate(time.Microsecond), Data: []byte(`{"session":"morning"}`)}
	}
	out, err := st.Apply(ctx, []journal.Entry{entry("s1"), entry("s2")})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != store.StatusStored || out[1].Status != store.StatusRejected || out[1].FullOption != "morning" {
		t.Errorf("sessions after the upgrade: %+v, want stored then rejected naming morning", out)
	}
}

// checkUpgradedFiles: the files the old release kept (named by upload id
// in --data/uploads) were moved into today's content-addressed objects
// at start — one content file for the document sent twice — and each
// entry's file downloads through its signed link with the SHA-256 the
// old release was sent; the file audit is clean.
func checkUpgradedFiles(t *testing.T, h *servertest.Harness, st server.Store, data string, fx upgradeFixture) {
	if len(fx.Files) == 0 {
		return
	}
	ctx := context.Background()
	contents := map[string]bool{}
	for _, f := range fx.Files {
		if _, err := os.Stat(filepath.Join(data, "uploads", f.Upload)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("upload %s is still in the old layout: %v", f.Upload, err)
		}
		contents[f.SHA256] = true
		o, ok, err := st.Outcome(ctx, "upgrade-files", f.Key)
		if err != nil || !ok || o.Status != "stored" {
			t.Fatalf("entry %s of the old release: %+v %v %v", f.Key, o, ok, err)
		}
		files, err := h.Server.Links.Files(ctx, st, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := files[f.Field]
		if len(got) != 1 || got[0].SHA256 != f.SHA256 || got[0].Size != f.Size || got[0].Name != f.Name {
			t.Fatalf("entry %s's files %+v, want %s of %d bytes, SHA-256 %s", f.Key, got, f.Name, f.Size, f.SHA256)
		}
		u, err := url.Parse(got[0].URL)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := servertest.Client().Get(h.URL + u.RequestURI())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sum := sha256.Sum256(b)
		if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("download of entry %s's file: %d, SHA-256 %x, want %s", f.Key, resp.StatusCode, sum, f.SHA256)
		}
		// A retry of the old key is answered as the first time.
		body, _ := json.Marshal(map[string]string{"name": f.Key, f.Field: "upload:" + f.Upload})
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/upgrade-files/submissions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", f.Key)
		resp, err = servertest.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(again) != f.First.Body {
			t.Errorf("retry of %s: %d %s, want 200 with %s", f.Key, resp.StatusCode, again, f.First.Body)
		}
	}
	stored, _ := filepath.Glob(filepath.Join(data, "uploads", dirobjects.ObjectsDir, "sha256", "*", "*"))
	if len(stored) != len(contents) {
		t.Errorf("content files %v, want one per content (%d)", stored, len(contents))
	}
	a, err := uploads.AuditFiles(ctx, st, dirobjects.DirBytes(filepath.Join(data, "uploads")), time.Now())
	if err != nil || !a.OK() || a.Claimed != len(fx.Files) {
		t.Errorf("file audit after the upgrade: %+v %v", a, err)
	}
}

// loadDump loads a pg_dump of the schema from into the schema the URL's
// search_path names.
func loadDump(t *testing.T, url, path, from string) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	to := cfg.RuntimeParams["search_path"]
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sql strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "\\") || line == "CREATE SCHEMA "+from+";" {
			continue // psql's own commands; the schema is the test's
		}
		sql.WriteString(strings.ReplaceAll(line, from+".", to+"."))
		sql.WriteByte('\n')
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql.String()); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
}

// readFixture reads expected.json of the fixture unpacked into dir.
func readFixture(t *testing.T, dir string) upgradeFixture {
	t.Helper()
	var fx upgradeFixture
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

// untar unpacks a .tar.gz into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Clean("/"+hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o700); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		case tar.TypeLink:
			// The uploads directory links each upload id to its content
			// file (tar writes the second name of a file as a link).
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(filepath.Join(dir, filepath.Clean("/"+hdr.Linkname)), path); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: %s is of a kind untar does not unpack (%c)", archive, hdr.Name, hdr.Typeflag)
		}
	}
}
