package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/uploads"
)

const filesForm = `
id: cv
fields:
  - {name: name,  type: text}
  - {name: cv,    type: file, max_files: 2}
`

// filesService opens the store under data and an uploads service on it
// with filesForm's form cv; the caller closes the store.
func filesService(t *testing.T, data string) (*sqlitestore.Store, *uploads.Service, *form.Form) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := form.Parse([]byte(filesForm), "")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := uploads.New(st, formsByID{"cv": fs[0]}, uploads.Config{Dir: filepath.Join(data, "uploads"), Expiry: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return st, svc, fs[0]
}

// filesData makes a data directory with a form whose entries have files
// (sent as plain posts are, through uploads.Service.Put) and returns the
// bytes of each entry's files by entry id.
func filesData(t *testing.T, data string, entries, filesEach int) map[string][][]byte {
	t.Helper()
	formsPath := writeForms(t, t.TempDir(), filesForm)
	var out bytes.Buffer
	if code := run([]string{"forms", "apply", "-f", formsPath, "--data", data}, &out, &out); code != 0 {
		t.Fatalf("forms apply: %d %s", code, out.String())
	}
	ctx := context.Background()
	st, svc, f := filesService(t, data)
	defer st.Close()
	sent := map[string][][]byte{}
	for i := range entries {
		var ids []string
		var ups []journal.Upload // the posted files, recorded by the decision
		for k := range filesEach {
			b := []byte(fmt.Sprintf("%%PDF-1.4\nentry %d file %d\n%s", i, k, strings.Repeat("x", 1000*(k+1))))
			up, err := svc.Put(ctx, f, "cv", fmt.Sprintf("../CV %d/%d.pdf", i, k), "", k, bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			ids, ups = append(ids, up.ID), append(ups, up)
			sent[fmt.Sprintf("e%d", i)] = append(sent[fmt.Sprintf("e%d", i)], b)
		}
		refs, _ := json.Marshal(ids)
		var vals []string
		for _, id := range ids {
			vals = append(vals, `"upload:`+id+`"`)
		}
		e := journal.Entry{ID: fmt.Sprintf("e%d", i), Seq: uint64(i + 1), Site: "default", Form: "cv", Key: fmt.Sprintf("k%d", i), ReceivedAt: time.Now(),
			Data: []byte(`{"name":"N` + fmt.Sprint(i) + `","cv":[` + strings.Join(vals, ",") + `],"_uploads":` + string(refs) + `}`), Uploads: ups}
		if o, err := st.Apply(ctx, []journal.Entry{e}); err != nil || o[0].Status != store.StatusStored {
			t.Fatalf("apply: %+v %v", o, err)
		}
	}
	return sent
}

type formsByID map[string]*form.Form

func (f formsByID) Get(id string) *form.Form { return f[id] }

// formd export --with-files: a zip that opens, whose entries file points
// at the files in it, each file byte for byte with the SHA-256 the
// entries file gives.
func TestExportWithFiles(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	sent := filesData(t, data, 3, 2)
	zipPath := filepath.Join(t.TempDir(), "cv.zip")
	var out bytes.Buffer
	if code := run([]string{"export", "--data", data, "--form", "cv", "--format", "jsonl", "--with-files", "-o", zipPath}, &out, &out); code != 0 {
		t.Fatalf("export: %d %s", code, out.String())
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatalf("the zip does not open: %v", err)
	}
	defer zr.Close()
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		members[f.Name] = f
	}
	ef := members["entries.jsonl"]
	if ef == nil {
		t.Fatalf("no entries.jsonl in %v", members)
	}
	rc, _ := ef.Open()
	entries, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	rows := decodeRows[cvRow](t, entries)
	for _, row := range rows {
		if len(row.Data.CV) != 2 {
			t.Fatalf("entry %s lists %d files: %+v", row.ID, len(row.Data.CV), row.Data.CV)
		}
		for k, file := range row.Data.CV {
			m := members[file.URL]
			if m == nil || !strings.HasPrefix(file.URL, "files/"+row.ID+"/") || strings.Contains(file.URL, "..") {
				t.Fatalf("entry %s: file at %q is not in the zip's folder of the entry", row.ID, file.URL)
			}
			r, _ := m.Open()
			got, _ := io.ReadAll(r)
			r.Close()
			sum := sha256.Sum256(got)
			if hex.EncodeToString(sum[:]) != file.SHA256 || !bytes.Equal(got, sent[row.ID][k]) || int64(len(got)) != file.Size {
				t.Fatalf("entry %s file %d: bytes differ from what was sent or from the sha256 listed", row.ID, k)
			}
		}
	}
	if len(rows) != 3 || len(zr.File) != 1+6 {
		t.Fatalf("%d rows and %d members, want 3 and 7", len(rows), len(zr.File))
	}
}

// formd audit names a claimed file whose bytes are gone and stored bytes
// nothing references, and fails; it passes when neither is so.
func TestAuditFiles(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	filesData(t, data, 2, 1)
	var out bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &out, &out); code != 0 {
		t.Fatalf("audit of whole files: %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "uploads: 2, claimed by kept entries: 2, their bytes missing: 0, stored files nothing references: 0") {
		t.Fatalf("audit output:\n%s", out.String())
	}
	dir := filepath.Join(data, "uploads")
	ids, _ := filepath.Glob(filepath.Join(dir, "objects", "ids", "*", "*"))
	if len(ids) != 2 {
		t.Fatalf("upload ids in the objects directory: %v", ids)
	}
	lost := filepath.Base(ids[0])
	links, _ := os.ReadDir(ids[0])
	os.Remove(filepath.Join(dir, "objects", "sha256", links[0].Name()[:2], links[0].Name())) // the bytes are lost
	os.RemoveAll(ids[0])
	stray := strings.Repeat("cd", 16)
	os.WriteFile(filepath.Join(dir, stray), []byte("left behind"), 0o600)
	out.Reset()
	if code := run([]string{"audit", "--data", data}, &out, &out); code != 1 {
		t.Fatalf("audit with a lost and a stray file: %d\n%s", code, out.String())
	}
	for _, want := range []string{"file missing: upload " + lost + " of entry e", "file not referenced: " + filepath.Join(dir, stray), "their bytes missing: 1, stored files nothing references: 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output lacks %q:\n%s", want, out.String())
		}
	}
}

// formd audit counts the deletions of bytes queued (an erased entry's
// file the server's pass has not reached: not an orphan, not a failure)
// and names one whose deletion failed, with the error, and fails.
func TestAuditDeletions(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	filesData(t, data, 2, 1)
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EraseEntries(ctx, []string{"e0"}, nil); err != nil {
		t.Fatal(err)
	}
	erased, err := st.ErasedUploads(ctx, 10)
	if err != nil || len(erased) != 1 {
		t.Fatalf("erased uploads %v %v", erased, err)
	}
	if ok, err := st.DropErasedUpload(ctx, erased[0]); err != nil || !ok {
		t.Fatalf("drop: %v %v", ok, err)
	}
	st.Close()
	var out bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &out, &out); code != 0 {
		t.Fatalf("audit with a deletion queued: %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "uploads whose bytes are queued for deletion: 1, of which failed at least once: 0") || strings.Contains(out.String(), "file not referenced") {
		t.Fatalf("audit output with a deletion queued:\n%s", out.String())
	}
	st, err = sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeletionFailed(ctx, erased[0], "unlinkat: permission denied", time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out.Reset()
	if code := run([]string{"audit", "--data", data}, &out, &out); code != 1 {
		t.Fatalf("audit with a failed deletion: %d\n%s", code, out.String())
	}
	want := "file not deleted: upload " + erased[0] + " (erased or expired), 1 failed attempts, the last at 2027-03-01T09:00:00Z: unlinkat: permission denied"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("audit output lacks %q:\n%s", want, out.String())
	}
}
