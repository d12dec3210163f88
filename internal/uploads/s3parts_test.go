package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// bucketLeft lists the objects and the multipart uploads under the
// service's prefix in the bucket.
func bucketLeft(t *testing.T, svc *Service) []string {
	t.Helper()
	left, err := svc.parts.Left(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// With --uploads s3 the parts of an upload being sent are in the bucket:
// another service (another instance, its own directory) answers the
// HEAD with the offset the first one acknowledged and takes the rest;
// the object is the bytes sent and nothing of the parts stays. A photo's
// GPS is removed from the object (the cleaned bytes put again). An
// upload left half sent expires with its parts, .info and multipart
// upload.
func TestS3PartsContinueOnAnotherInstance(t *testing.T) {
	t.Parallel()
	loc := objectstest.S3Location(t)
	ctx := context.Background()
	objs, err := s3objects.New(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(objs.CloseIdleConnections)
	r := newRig(t)
	r.restart(objs)
	other, err := New(r.st, r.forms, Config{Dir: filepath.Join(t.TempDir(), "uploads"), Objects: objs, Expiry: 24 * time.Hour, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	other.Register(mux)
	srv2 := httptest.NewServer(mux)
	defer srv2.Close()
	on := func(srv *httptest.Server, method, loc string, offset int, body []byte) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+loc, strings.NewReader(string(body)))
		req.Header.Set("Tus-Resumable", "1.0.0")
		if method == "PATCH" {
			req.Header.Set("Upload-Offset", strconv.Itoa(offset))
			req.Header.Set("Content-Type", "application/offset+octet-stream")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}

	body := png(60 << 10)
	loc1 := r.create("photo", len(body))
	id := strings.TrimPrefix(loc1, "/v1/forms/exam/uploads/")
	if res := r.patch(loc1, 0, body[:25000], false); res.StatusCode != 204 {
		t.Fatalf("first chunk: %d %s", res.StatusCode, problemCode(t, res))
	}
	if res := on(srv2, "HEAD", loc1, 0, nil); res.StatusCode != 200 || res.Header.Get("Upload-Offset") != "25000" {
		t.Fatalf("HEAD on the other instance: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
	}
	if res := on(srv2, "PATCH", loc1, 25000, body[25000:]); res.StatusCode != 204 {
		t.Fatalf("the rest on the other instance: %d %s", res.StatusCode, problemCode(t, res))
	}
	if u, err := r.st.Upload(ctx, id); err != nil || !u.Complete || u.SHA256 != sha256.Sum256(body) || u.Type != "image/png" {
		t.Fatalf("the upload continued elsewhere: %+v %v", u, err)
	}
	if got := readAll(t, r.svc, id); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("the object is not the bytes sent")
	}
	if left := bucketLeft(t, r.svc); len(left) != 1 || left[0] != id {
		t.Fatalf("the bucket holds %v, want only the object %s", left, id)
	}

	// A photo with GPS: the object is the cleaned photo, its digest the
	// cleaned bytes'.
	gps, err := os.ReadFile(filepath.Join("exif", "testdata", "gps-photo.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	loc2 := r.create("photo", len(gps))
	id2 := strings.TrimPrefix(loc2, "/v1/forms/exam/uploads/")
	if res := on(srv2, "PATCH", loc2, 0, gps); res.StatusCode != 204 {
		t.Fatalf("PATCH the photo: %d %s", res.StatusCode, problemCode(t, res))
	}
	kept := readAll(t, r.svc, id2)
	if !bytes.Equal(kept, scrubbed(t, gps)) {
		t.Fatalf("the object keeps the photo's GPS (%d bytes of %d)", len(kept), len(gps))
	}
	if u, err := r.st.Upload(ctx, id2); err != nil || u.SHA256 != sha256.Sum256(kept) {
		t.Fatalf("the digest is not the cleaned bytes': %+v %v", u, err)
	}

	// Half sent, then forgotten: expiry takes the parts too.
	loc3 := r.create("photo", len(body))
	id3 := strings.TrimPrefix(loc3, "/v1/forms/exam/uploads/")
	if res := on(srv2, "PATCH", loc3, 0, body[:20000]); res.StatusCode != 204 {
		t.Fatalf("half of the third: %d %s", res.StatusCode, problemCode(t, res))
	}
	left := bucketLeft(t, r.svc)
	if !contains(left, "parts/"+id3+".part") || !contains(left, "parts/"+id3+".info") || !contains(left, "multipart "+id3) {
		t.Fatalf("a half-sent upload's parts are not in the bucket: %v", left)
	}
	r.clock.add(25 * time.Hour)
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 3 {
		t.Fatalf("RunOnce: %d %v", n, err)
	}
	if left := bucketLeft(t, r.svc); len(left) != 0 {
		t.Fatalf("left in the bucket after the expiry: %v", left)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
