package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/formd/formd/internal/server/servertest"
)

// TestDraftKeepsItsFiles: a file uploaded for a draft is kept as long as
// the draft (draft_ttl), not only the upload expiry of a file no
// submission names: past the upload expiry, the expiry pass leaves the
// draft's file and removes the other.
func TestDraftKeepsItsFiles(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, uploadForms+"drafts: true\ndraft_ttl: 30d\n", servertest.Options{})
	kept := upload(t, h, photoBytes(2000, 1))
	other := upload(t, h, photoBytes(2000, 2))
	req, _ := http.NewRequest("PUT", h.URL+"/v1/forms/exam/drafts/k-draft", bytes.NewReader([]byte(`{"name":"Ann","photo":"upload:`+kept+`"}`)))
	req.Header.Set("Content-Type", "application/json")
	res, err := servertest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("draft save: %s", res.Status)
	}
	ctx := context.Background()
	// Two days on: past the upload expiry (24 h), well within the draft's.
	later := time.Now().Add(48 * time.Hour)
	if gone, err := h.Server.Store.ExpireUpload(ctx, kept, later); err != nil || gone {
		t.Fatalf("the draft's file expired with the upload expiry (%v)", err)
	}
	if gone, err := h.Server.Store.ExpireUpload(ctx, other, later); err != nil || !gone {
		t.Fatalf("a file no draft names was kept (%v)", err)
	}
	// And it goes once the draft would have expired.
	if gone, err := h.Server.Store.ExpireUpload(ctx, kept, time.Now().Add(31*24*time.Hour)); err != nil || !gone {
		t.Fatalf("the draft's file outlived the draft (%v)", err)
	}
}
