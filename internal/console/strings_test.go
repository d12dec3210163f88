package console

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/store"
)

// TestStringTablesHaveOneKeySet: every console text exists in both
// languages, so a Chinese page never falls back to English.
func TestStringTablesHaveOneKeySet(t *testing.T) {
	t.Parallel()
	for key := range enStrings {
		if zhStrings[key] == "" {
			t.Errorf("%q has no Chinese text", key)
		}
	}
	for key := range zhStrings {
		if enStrings[key] == "" {
			t.Errorf("%q has no English text", key)
		}
	}
}

// TestTemplatesUseKnownKeys: every literal key a template or handler
// asks for is in the tables (a missing one would show the key itself).
func TestTemplatesUseKnownKeys(t *testing.T) {
	t.Parallel()
	uses := regexp.MustCompile(`\bth? \$?[.\w]*L "([^"]+)"|\bT\["([^"]+)"\]`)
	files, _ := filepath.Glob("templates/*.html")
	gos, _ := filepath.Glob("*.go")
	var seen []string
	for _, f := range append(files, gos...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(raw), -1) {
			key := m[1] + m[2]
			if _, ok := enStrings[key]; !ok && !slices.Contains(seen, key) {
				seen = append(seen, key)
				t.Errorf("%s asks for %q, which is not in the tables", f, key)
			}
		}
	}
}

// auditActions is every action formd writes to the audit log (grep
// `Action:`, `h.audit(` and `record(st,`): the log shows each in words.
var auditActions = []string{
	"account.add", "account.disable", "account.enable", "account.password", "account.reset-link", "account.role",
	"dead-letter.retry", "deliveries.redeliver", "endpoint.enable", "entry.cancel", "entry.not-spam", "entry.spam",
	"event.redeliver", "form.archive", "form.close", "form.create", "form.delete", "form.duplicate", "form.open", "form.publish", "form.rollback", "form.unarchive", "forms.apply", "login", "login.failure", "login.locked", "logout",
	"logout.everywhere", "person.forget", "replay.dry-run", "replay.run", "session.start", "token.create", "token.revoke",
}

// TestEveryShownCodeHasWords: the keys templates build from values
// (status.*, event.*, action.*, delivery.*, attempt.*) exist in both
// languages for every value formd produces, so no code shows through.
func TestEveryShownCodeHasWords(t *testing.T) {
	t.Parallel()
	var keys []string
	for _, s := range admin.Statuses {
		keys = append(keys, "status."+s)
	}
	for _, e := range []string{store.EventStored, store.EventWaitlisted, store.EventPromoted, store.EventCancelled, store.EventSpam} {
		keys = append(keys, "event."+e)
	}
	for _, a := range auditActions {
		keys = append(keys, "action."+a)
	}
	for _, d := range []string{"pending", "delivered", "failed", "skipped"} {
		keys = append(keys, "delivery."+d)
	}
	for _, o := range []string{"delivered", "retry", "gone", "refused", "skipped"} {
		keys = append(keys, "attempt."+o)
	}
	for _, k := range keys {
		if enStrings[k] == "" || zhStrings[k] == "" {
			t.Errorf("%q: en %q, zh %q", k, enStrings[k], zhStrings[k])
		}
	}
}

// TestChineseSpeaksToOrganizers: the Chinese console names things in an
// event organizer's words; the engineers' terms appear only in the
// term.* tooltips.
func TestChineseSpeaksToOrganizers(t *testing.T) {
	t.Parallel()
	for key, s := range zhStrings {
		if strings.HasPrefix(key, "term.") {
			continue
		}
		for _, jargon := range []string{"死信", "判定", "证明", "重放", "幂等键"} {
			if strings.Contains(s, jargon) {
				t.Errorf("%q says %s: %s", key, jargon, s)
			}
		}
	}
}
