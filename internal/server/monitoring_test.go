package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"go.yaml.in/yaml/v3"
)

// notYetExported are series the alert rules and the dashboard use that
// other branches add in parallel with this one. The coordinator removes
// each entry once its branch is merged; the test then checks it like any
// other, and says so when an entry is left behind after its series came.
var notYetExported = map[string]string{
	// Exported only when formd serves TLS itself; TestOwnCertificate
	// scrapes it there.
	"formd_tls_cert_expiry_timestamp_seconds": "TLS only (TestOwnCertificate)",
}

// laxJournal is the embedded journal reporting lax durability, as
// natsjournal does on a stream of one replica: the one series of the
// rules that an embedded journal cannot produce by itself.
type laxJournal struct{ *sqlitejournal.Journal }

func (laxJournal) LaxDurability() []string {
	return []string{"reported by the test's wrapper, as a one-replica NATS stream would"}
}

var _ journal.LaxDurability = laxJournal{}

// TestMonitoringSeriesAreExported: every series that
// deploy/prometheus/alerts.yml and deploy/grafana/formd.json use is one a
// running formd exports on /metrics. The instance is made to export each:
// a form with a capacity and a webhook whose receiver answers 410 Gone
// (deliveries, the endpoint switched off), a --journal-max-size (the
// bound), a submission (intake and outcome series).
func TestMonitoringSeriesAreExported(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusGone)
	}))
	defer gone.Close()
	forms := fmt.Sprintf(`
id: fair
fields: [{name: name, type: text, required: true}]
capacity: 5
notify:
  webhooks: [{url: %q, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]
`, gone.URL)
	h := servertest.Start(t, forms, servertest.Options{
		Config: func(c *config.Config) {
			c.WebhookAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			c.JournalMaxSize = 64 << 20
			// A schedule: the backup series (the first backup is due at
			// once, with none in the directory).
			c.BackupEvery, c.BackupDir, c.BackupKeep = 24*time.Hour, filepath.Join(t.TempDir(), "backups"), 2
		},
		WrapJournal: func(j journal.Journal) journal.Journal { return laxJournal{j.(*sqlitejournal.Journal)} },
	})
	resp, err := http.Post(h.URL+"/v1/forms/fair/submissions", "application/json", strings.NewReader(`{"name":"Ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submission: %d", resp.StatusCode)
	}

	used := map[string][]string{} // series → where it is used
	for name, where := range seriesInRules(t, "../../deploy/prometheus/alerts.yml") {
		used[name] = append(used[name], where...)
	}
	for name, where := range seriesInDashboard(t, "../../deploy/grafana/formd.json") {
		used[name] = append(used[name], where...)
	}
	for _, want := range []string{"formd_journal_writable", "formd_endpoint_disabled", "formd_capacity_left"} {
		if used[want] == nil {
			t.Fatalf("%s is not found in the rules or the dashboard: the files were not read right", want)
		}
	}

	// The 410 is met by the outbox a moment after the answer.
	var exported map[string]bool
	poll.Until(t, "the endpoint that answered 410 to be switched off and the first scheduled backup taken", 20*time.Second, func() bool {
		exported = scrapeNames(t, h.MetricsURL+"/metrics")
		return exported["formd_endpoint_disabled"] && exported["formd_delivery_seconds_bucket"] && exported["formd_backup_last_success_timestamp_seconds"]
	})
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		_, later := notYetExported[name]
		switch {
		case exported[name] && later:
			t.Errorf("%s is exported now: remove it from notYetExported", name)
		case !exported[name] && !later:
			t.Errorf("%s (used in %s) is not exported by formd", name, strings.Join(used[name], ", "))
		}
	}
	for name, branch := range notYetExported {
		if used[name] == nil {
			t.Errorf("notYetExported names %s (%s), which nothing uses", name, branch)
		}
	}
}

// seriesName finds the names of series in a PromQL expression: formd's
// own, and the Go and process collectors'. up is made by Prometheus, not
// exported, so it is left out.
var seriesName = regexp.MustCompile(`\b(?:formd|process|go)_[a-z0-9_]+\b`)

func seriesInRules(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	found := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("%s: a rule without an alert name or an expression: %+v", path, r)
			}
			for _, n := range seriesName.FindAllString(r.Expr, -1) {
				found[n] = append(found[n], "alert "+r.Alert)
			}
		}
	}
	return found
}

// seriesInDashboard reads the dashboard, checking it is JSON Grafana can
// import: panels with unique ids, each (but rows) with a query.
func seriesInDashboard(t *testing.T, path string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		UID    string
		Panels []struct {
			ID      int
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: no title, uid or panels", path)
	}
	found := map[string][]string{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel id %d twice", path, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", path, p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range seriesName.FindAllString(tg.Expr, -1) {
				found[n] = append(found[n], fmt.Sprintf("panel %q", p.Title))
			}
		}
	}
	return found
}

// scrapeNames returns the names of the samples /metrics serves.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
