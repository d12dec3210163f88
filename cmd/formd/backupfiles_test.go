package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// TestBackupRestoresFiles: formd backup of a data directory whose
// entries have files (one photo in two entries), formd restore into a
// new directory, formd serve on it; every entry's files download through
// their signed links byte for byte, and formd audit is clean. A backup
// with one file missing or damaged fails formd backup verify naming it.
func TestBackupRestoresFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	data, to, restored := filepath.Join(dir, "data"), filepath.Join(dir, "backup"), filepath.Join(dir, "restored")
	sent := filesData(t, data, 3, 2)
	sent["e3"] = [][]byte{sameFileEntry(t, data, sent["e0"][0])}
	formsPath := writeForms(t, dir, filesForm)
	bin := buildFormd(t, t.TempDir())
	startFormd(t, bin, data, formsPath).stop(t) // a server has run on it: the journal is there

	var out bytes.Buffer
	if code := run([]string{"backup", "--data", data, "--to", to}, &out, &out); code != 0 {
		t.Fatalf("formd backup: %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "6 files of 7 uploads") {
		t.Fatalf("formd backup does not say it holds 6 files of 7 uploads:\n%s", out.String())
	}
	// With the files in a bucket, the backup says they are not in it.
	out.Reset()
	toS3 := filepath.Join(dir, "backup-s3")
	if code := run([]string{"backup", "--data", data, "--to", toS3, "--uploads", "s3://formd-files/p?endpoint=http://127.0.0.1:9"}, &out, &out); code != 0 ||
		!strings.Contains(out.String(), "NOT in this backup: they live in s3://formd-files/p/") {
		t.Fatalf("formd backup with --uploads s3://…: %d\n%s", code, out.String())
	}
	if raw, _ := os.ReadFile(filepath.Join(toS3, "manifest.json")); !strings.Contains(string(raw), `"uploads_elsewhere": "s3://formd-files/p/"`) {
		t.Fatalf("the manifest does not say where the files are:\n%s", raw)
	}
	out.Reset()
	if code := run([]string{"restore", "--from", to, "--data", restored}, &out, &out); code != 0 {
		t.Fatalf("formd restore: %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"audit", "--data", restored}, &out, &out); code != 0 {
		t.Fatalf("formd audit of the restored data: %d\n%s", code, out.String())
	}
	rows := exportRows[cvRow](t, restored, "cv")
	srv := startFormd(t, bin, restored, formsPath)
	client := &http.Client{Timeout: 10 * time.Second}
	downloaded := 0
	for _, row := range rows {
		if len(row.Data.CV) != len(sent[row.ID]) {
			t.Fatalf("entry %s lists %d files, had %d", row.ID, len(row.Data.CV), len(sent[row.ID]))
		}
		for k, f := range row.Data.CV {
			u, err := url.Parse(f.URL)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Get(srv.url + u.RequestURI())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			sum := sha256.Sum256(got)
			want := sha256.Sum256(sent[row.ID][k])
			if res.StatusCode != 200 || sum != want || hex.EncodeToString(sum[:]) != f.SHA256 {
				t.Fatalf("entry %s file %d from the restored server: %d, SHA-256 %x, want %x", row.ID, k, res.StatusCode, sum, want)
			}
			downloaded++
		}
	}
	if downloaded != 7 {
		t.Fatalf("downloaded %d files, want 7", downloaded)
	}
	srv.stop(t)

	// One file missing, one damaged: verify names it.
	var photo string
	filepath.WalkDir(filepath.Join(to, "uploads"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && photo == "" {
			photo = p
		}
		return nil
	})
	for _, damage := range []string{"missing", "damaged"} {
		bad := filepath.Join(t.TempDir(), "bad")
		if err := os.CopyFS(bad, os.DirFS(to)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(bad, strings.TrimPrefix(photo, to))
		if damage == "missing" {
			os.Remove(p)
		} else {
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0x20
			os.WriteFile(p, b, 0o600)
		}
		out.Reset()
		if code := run([]string{"backup", "verify", bad}, &out, &out); code != 1 || !strings.Contains(out.String(), p) {
			t.Errorf("verify of a backup with a %s file: %d\n%s", damage, code, out.String())
		}
	}
}

// sameFileEntry adds an entry e3 whose one file has the bytes of another
// entry's file (sent again, as a second upload), and returns them.
func sameFileEntry(t *testing.T, data string, b []byte) []byte {
	t.Helper()
	ctx := context.Background()
	st, svc, f := filesService(t, data)
	defer st.Close()
	up, err := svc.Put(ctx, f, "cv", "again.pdf", "", 0, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	e := journal.Entry{ID: "e3", Seq: 4, Site: "default", Form: "cv", Key: "k3", ReceivedAt: time.Now(),
		Data:    []byte(fmt.Sprintf(`{"name":"N3","cv":["upload:%s"],"_uploads":["%s"]}`, up.ID, up.ID)),
		Uploads: []journal.Upload{up}} // the posted file, recorded by the decision
	if o, err := st.Apply(ctx, []journal.Entry{e}); err != nil || o[0].Status != store.StatusStored {
		t.Fatalf("apply: %+v %v", o, err)
	}
	return b
}
