package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// formd audit counts the drafts saved and not sent, per form, and the
// erasure requests waiting for the organizer — never a draft's values.
func TestAuditCountsDrafts(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	filesData(t, data, 1, 1)
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	oldest := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, k := range []string{"a", "b"} {
		if _, err := st.SaveDraft(ctx, store.DraftSave{Form: "cv", Site: "default", Key: k, TokenHash: []byte("t-" + k),
			Data: []byte(`{"name":"Secret Name"}`), Now: oldest.Add(time.Duration(i) * time.Hour), TTL: 24 * time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	var out bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &out, &out); code != 0 {
		t.Fatalf("audit: %d\n%s", code, out.String())
	}
	for _, want := range []string{"drafts saved and not sent: 2", "cv                           2 (oldest saved 2030-01-02T03:04:05Z)",
		"erasure requests waiting for the organizer: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Secret Name") {
		t.Fatalf("audit shows a draft's values:\n%s", out.String())
	}
}
