package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/uploads"
	"github.com/formd/formd/internal/uploads/dirobjects"
)

const fileForms = `
id: exam
fields:
  - {name: name,  type: text}
  - {name: photo, type: file, accept: [image/png]}
  - {name: cv,    type: file, accept: [application/pdf]}
`

// pngBytes is a PNG-looking file of n bytes (its type is sniffed from
// the signature), different for each seed.
func pngBytes(n int, seed byte) []byte {
	b := bytes.Repeat([]byte{seed}, n)
	copy(b, "\x89PNG\r\n\x1a\n")
	return b
}

// tusUpload sends a file through tus and returns the upload's id.
func tusUpload(t *testing.T, base, field, name string, body []byte) string {
	t.Helper()
	c := servertest.Client()
	md := "field " + base64.StdEncoding.EncodeToString([]byte(field)) + ",filename " + base64.StdEncoding.EncodeToString([]byte(name))
	req, _ := http.NewRequest("POST", base+"/v1/forms/exam/uploads", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(len(body)))
	req.Header.Set("Upload-Metadata", md)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != 201 || loc == "" {
		t.Fatalf("create an upload: %d", res.StatusCode)
	}
	if !strings.HasPrefix(loc, "http") {
		loc = base + loc
	}
	req, _ = http.NewRequest("PATCH", loc, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 204 {
		t.Fatalf("PATCH: %d %s", res.StatusCode, b)
	}
	return loc[strings.LastIndex(loc, "/")+1:]
}

func submit(t *testing.T, base, key, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/forms/exam/submissions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := servertest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("submission %s: %d %s", key, res.StatusCode, b)
	}
}

// servedWithFiles makes a data directory, written by a real server that
// has stopped, with three entries with files — one photo in two of them
// — and an upload no entry claimed yet. It returns the bytes of each
// claimed upload by id, and the id of the unclaimed one.
func servedWithFiles(t *testing.T) (string, map[string][]byte, string) {
	t.Helper()
	h := servertest.Start(t, fileForms, servertest.Options{})
	photo, other := pngBytes(30000, 1), pngBytes(5000, 2)
	cv := []byte("%PDF-1.4\n" + strings.Repeat("a CV ", 400))
	sent := map[string][]byte{}
	up := func(field, name string, b []byte) string {
		id := tusUpload(t, h.URL, field, name, b)
		sent[id] = b
		return id
	}
	p1, p2, c := up("photo", "me.png", photo), up("photo", "me again.png", photo), up("cv", "cv.pdf", cv)
	unclaimed := up("photo", "not sent yet.png", other)
	delete(sent, unclaimed)
	submit(t, h.URL, "k1", `{"name":"A","photo":"upload:`+p1+`"}`)
	submit(t, h.URL, "k2", `{"name":"B","photo":"upload:`+p2+`","cv":"upload:`+c+`"}`)
	h.Stop()
	return h.Data, sent, unclaimed
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A backup holds the bytes of every upload its store names, once per
// content; a restore puts them back so that each upload reads byte for
// byte and the file audit is clean.
func TestBackupHoldsTheFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, sent, unclaimed := servedWithFiles(t)
	to := filepath.Join(t.TempDir(), "b")
	m, err := backup.Take(ctx, backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to, Version: "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Uploads) != 2 || len(m.UploadsGone) != 0 || len(m.UploadsDamaged) != 0 || m.Format != 2 {
		t.Fatalf("manifest uploads %+v gone %v damaged %v format %d: want two contents (one photo of two uploads, a CV; not the upload no entry claimed)", m.Uploads, m.UploadsGone, m.UploadsDamaged, m.Format)
	}
	ids := 0
	for _, u := range m.Uploads {
		ids += len(u.IDs)
		if b, err := os.ReadFile(filepath.Join(to, "uploads", u.SHA256[:2], u.SHA256)); err != nil || sumOf(b) != u.SHA256 || int64(len(b)) != u.Size {
			t.Fatalf("the backup's copy of %s: %v", u.SHA256, err)
		}
	}
	if ids != len(sent) {
		t.Fatalf("the manifest names %d uploads, %d were claimed", ids, len(sent))
	}
	for _, u := range m.Uploads {
		if slices.Contains(u.IDs, unclaimed) {
			t.Fatalf("the upload no entry claimed is in the backup: %+v", u)
		}
	}
	if _, err := backup.Verify(ctx, server.BackupDrivers(), to); err != nil {
		t.Fatal(err)
	}

	restored := newDir(t)
	known, err := server.KnownSchemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, release, err := backup.Restore(ctx, backup.RestoreOptions{Drivers: server.BackupDrivers(), From: to, Data: restored, Version: "v1.0.0", Known: known, Lock: server.LockData})
	if err != nil {
		t.Fatal(err)
	}
	release()
	objs := dirobjects.DirAt(filepath.Join(restored, "uploads"))
	for id, want := range sent {
		o, err := objs.Open(ctx, id)
		if err != nil {
			t.Fatalf("upload %s after the restore: %v", id, err)
		}
		got, _ := io.ReadAll(o)
		o.Close()
		if sumOf(got) != sumOf(want) {
			t.Fatalf("upload %s differs after the restore", id)
		}
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(restored, backup.StoreFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if a, err := uploads.AuditFiles(ctx, st, dirobjects.DirBytes(filepath.Join(restored, "uploads")), time.Now()); err != nil || !a.OK() || a.Claimed != 3 {
		t.Fatalf("file audit of the restored data: %+v %v", a, err)
	}
	// The upload the backup left out lost its record too: no later
	// submission can claim a file that is not there.
	if _, err := st.Upload(ctx, unclaimed); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("the upload no entry claimed, after the restore: %v; want its record gone (store.ErrUploadNotFound)", err)
	}

	// A backup with one file missing, or one byte of one changed, fails
	// verify naming the file.
	var photo backup.Upload
	for _, u := range m.Uploads {
		if len(u.IDs) == 2 {
			photo = u
		}
	}
	missing := copyDir(t, to)
	os.Remove(filepath.Join(missing, "uploads", photo.SHA256[:2], photo.SHA256))
	damaged := copyDir(t, to)
	flip(t, filepath.Join(damaged, "uploads", photo.SHA256[:2], photo.SHA256), 1000)
	for name, dir := range map[string]string{"missing": missing, "SHA-256": damaged} {
		_, err := backup.Verify(ctx, server.BackupDrivers(), dir)
		if err == nil || !strings.Contains(err.Error(), photo.SHA256) || !strings.Contains(err.Error(), name) {
			t.Errorf("verify of a backup with its photo %s: %v", name, err)
		}
		if _, _, err := backup.Restore(ctx, backup.RestoreOptions{Drivers: server.BackupDrivers(), From: dir, Data: newDir(t), Version: "v1.0.0", Known: known, Lock: server.LockData}); err == nil {
			t.Errorf("restore of a backup with its photo %s succeeded", name)
		}
	}

	// A second backup of the same data links the files the first holds.
	to2 := filepath.Join(t.TempDir(), "b2")
	if _, err := backup.Take(ctx, backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to2, Version: "v1.0.0", LinkFrom: to}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(filepath.Join(to, "uploads", photo.SHA256[:2], photo.SHA256))
	b, _ := os.Stat(filepath.Join(to2, "uploads", photo.SHA256[:2], photo.SHA256))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Error("the second backup copied a file the first holds")
	}
	if _, err := backup.Verify(ctx, server.BackupDrivers(), to2); err != nil {
		t.Fatal(err)
	}

	// A file of the earlier backup damaged on its disk since (same size,
	// other bytes) is not linked: it is copied afresh from --data, and the
	// new backup is whole.
	damagedEarlier := copyDir(t, to2)
	earlier := filepath.Join(damagedEarlier, "uploads", photo.SHA256[:2], photo.SHA256)
	flip(t, earlier, 10)
	to3 := filepath.Join(t.TempDir(), "b3")
	if _, err := backup.Take(ctx, backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to3, Version: "v1.0.0", LinkFrom: damagedEarlier}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Verify(ctx, server.BackupDrivers(), to3); err != nil {
		t.Fatalf("a backup linked from a damaged earlier one: %v", err)
	}
	a, _ = os.Stat(earlier)
	b, _ = os.Stat(filepath.Join(to3, "uploads", photo.SHA256[:2], photo.SHA256))
	if a == nil || b == nil || os.SameFile(a, b) {
		t.Error("the backup linked the earlier backup's damaged file")
	}

	// --force replaces the uploaded files with the store that names them:
	// bytes of the replaced data do not stay behind as files no entry has.
	stray := filepath.Join(restored, "uploads", "objects", "sha256", "00", strings.Repeat("0", 64))
	if err := os.MkdirAll(filepath.Dir(stray), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stray, []byte("the replaced data's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, release, err = backup.Restore(ctx, backup.RestoreOptions{Drivers: server.BackupDrivers(), From: to, Data: restored, Force: true, Version: "v1.0.0", Known: known, Lock: server.LockData})
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(stray); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--force left the replaced data's file behind: %v", err)
	}
	st2, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(restored, backup.StoreFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if a, err := uploads.AuditFiles(ctx, st2, dirobjects.DirBytes(filepath.Join(restored, "uploads")), time.Now()); err != nil || !a.OK() {
		t.Fatalf("file audit after a --force restore: %+v %v", a, err)
	}
}

// An upload erased between the store's copy and its file's (forget,
// retention, expiry) is listed in the manifest as gone, not a failure;
// with --uploads s3://… the manifest says the bucket's files are not in
// the backup.
func TestBackupFilesGoneOrElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, sent, _ := servedWithFiles(t)
	var cv string
	for id, b := range sent {
		if bytes.HasPrefix(b, []byte("%PDF")) {
			cv = id
		}
	}
	objs := dirobjects.DirAt(filepath.Join(data, "uploads"))
	if err := os.Remove(objs.ContentPath(sumOf(sent[cv]))); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "b")
	m, err := backup.Take(ctx, backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to, Version: "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Uploads) != 1 || fmt.Sprint(m.UploadsGone) != "["+cv+"]" {
		t.Fatalf("manifest uploads %+v gone %v, want the CV gone", m.Uploads, m.UploadsGone)
	}
	if _, err := backup.Verify(ctx, server.BackupDrivers(), to); err != nil {
		t.Fatal(err)
	}
	to2 := filepath.Join(t.TempDir(), "b2")
	m, err = backup.Take(ctx, backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to2, Version: "v1.0.0", UploadsElsewhere: "s3://bucket/formd/"})
	if err != nil {
		t.Fatal(err)
	}
	if m.UploadsElsewhere != "s3://bucket/formd/" || len(m.Uploads) != 0 || m.Format != 1 {
		t.Fatalf("manifest with the files in a bucket: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(to2, "uploads")); !os.IsNotExist(err) {
		t.Fatalf("a backup of a bucket's installation has an uploads directory: %v", err)
	}
}
