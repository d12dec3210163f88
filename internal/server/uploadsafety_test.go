package server_test

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
)

// With --clamd set and clamd down, an upload's last PATCH is 503
// scan-unavailable with Retry-After: the file waits, unclaimable. A
// submission naming it anyway is journaled (DESIGN invariant 12: intake
// asks the store nothing first) and decided: 422 upload-incomplete for the
// field, never claimed unscanned, the same answer for a retry of its key.
func TestSubmissionWaitsForTheScanner(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "clamd.ctl") // nothing listens here
	h := servertest.Start(t, uploadForms, servertest.Options{Config: func(c *config.Config) { c.Clamd = "unix://" + sock }})
	c := servertest.Client()
	photo := photoBytes(4<<10, 3)
	meta := "field " + base64.StdEncoding.EncodeToString([]byte("photo"))
	res := tusDo(t, c, "POST", h.URL+"/v1/forms/exam/uploads", map[string]string{"Upload-Length": strconv.Itoa(len(photo)), "Upload-Metadata": meta}, nil)
	if res.StatusCode != 201 {
		t.Fatalf("create: %d", res.StatusCode)
	}
	loc := h.URL + res.Header.Get("Location")
	res = tusDo(t, c, "PATCH", loc, map[string]string{"Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}, photo)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("last PATCH with clamd down: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	id := loc[strings.LastIndexByte(loc, '/')+1:]
	for range 2 { // and again, with the same key
		a := submitWithPhoto(t, h, "scan-1", "Li Lei", id)
		if a.status != 422 || a.code != "validation-failed" || !strings.Contains(string(a.body), `"field":"photo","code":"upload-incomplete"`) {
			t.Fatalf("submission naming an unscanned upload: %d %s", a.status, a.body)
		}
	}
	if u, err := h.Server.Store.Upload(context.Background(), id); err != nil || u.Complete || u.Entry != "" {
		t.Fatalf("the unscanned upload: %+v %v", u, err)
	}
}
