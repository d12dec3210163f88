// Package objectstest is the conformance suite of the uploads service's
// object tiers: every tier (the directory under --data, an S3 bucket)
// runs it, as every store runs storetest, so that the rules the service
// relies on hold on each and cannot drift between them.
package objectstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Objects is what the suite needs of a tier: the uploads service's
// Objects interface, declared again here so that this package does not
// import the service.
type Objects interface {
	Keep(ctx context.Context, id, path string, size int64, sum [32]byte) error
	Open(ctx context.Context, id string) (io.ReadSeekCloser, error)
	Delete(ctx context.Context, id string) error
}

// Tier opens a tier for one test.
type Tier struct {
	// Open gives two instances over the same storage (two processes on
	// one --data, two servers on one bucket): what one keeps the other
	// reads, and their changes to one content are ordered.
	Open func(t *testing.T) (a, b Objects)
	// NotFound is the error Open returns (wrapped or not) for an id
	// without an object.
	NotFound error
}

// Run runs the suite on a tier.
func Run(t *testing.T, tier Tier) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, tier Tier)
	}{
		{"KeepThenOpen", keepThenOpen},
		{"KeepTwice", keepTwice},
		{"Missing", missing},
		{"SameContentTwoIDs", sameContentTwoIDs},
		{"AcrossInstances", acrossInstances},
		{"KeepAndDeleteOfOneContentAcrossInstances", keepAndDeleteAcross},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, tier)
		})
	}
}

// newID is an upload id as the service makes them: 32 hex digits.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keep writes body to a fresh file (a Keep may take the file away) and
// keeps it as id.
func keep(t *testing.T, o Objects, id string, body []byte) {
	t.Helper()
	if err := tryKeep(t, o, id, body); err != nil {
		t.Fatalf("Keep %s: %v", id, err)
	}
}

func tryKeep(t *testing.T, o Objects, id string, body []byte) error {
	t.Helper()
	return o.Keep(context.Background(), id, tempFile(t, id, body), int64(len(body)), sha256.Sum256(body))
}

// tempFile is a new file holding body.
func tempFile(t *testing.T, name string, body []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Read is the object id's bytes, failing the test when it cannot be
// read whole.
func Read(t *testing.T, o Objects, id string) []byte {
	t.Helper()
	f, err := o.Open(context.Background(), id)
	if err != nil {
		t.Fatalf("Open %s: %v", id, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return b
}

func body(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func wantMissing(t *testing.T, tier Tier, o Objects, id string) {
	t.Helper()
	f, err := o.Open(context.Background(), id)
	if err == nil {
		f.Close()
		t.Fatalf("Open %s: an object, want none", id)
	}
	if !errors.Is(err, tier.NotFound) {
		t.Fatalf("Open %s: %v, want %v", id, err, tier.NotFound)
	}
}

// An object reads back as kept, and seeks (downloads answer ranges).
func keepThenOpen(t *testing.T, tier Tier) {
	o, _ := tier.Open(t)
	b := body(70 << 10)
	id := newID()
	keep(t, o, id, b)
	if got := Read(t, o, id); !bytes.Equal(got, b) {
		t.Fatalf("read %d bytes, kept %d", len(got), len(b))
	}
	f, err := o.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(1000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tail, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(tail, b[1000:]) {
		t.Fatalf("after Seek(1000): %d bytes, %v", len(tail), err)
	}
}

// A second Keep of the same id and bytes is no error (a retried
// completion) and changes nothing.
func keepTwice(t *testing.T, tier Tier) {
	o, _ := tier.Open(t)
	b := body(4 << 10)
	id := newID()
	keep(t, o, id, b)
	keep(t, o, id, b)
	if got := Read(t, o, id); !bytes.Equal(got, b) {
		t.Fatal("the object changed on a second Keep")
	}
}

// Open of an id without an object is NotFound; Delete of one is no
// error, and after a Delete the object is gone.
func missing(t *testing.T, tier Tier) {
	o, _ := tier.Open(t)
	id := newID()
	wantMissing(t, tier, o, id)
	if err := o.Delete(context.Background(), id); err != nil {
		t.Fatalf("Delete of no object: %v", err)
	}
	keep(t, o, id, body(100))
	if err := o.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, tier, o, id)
	if err := o.Delete(context.Background(), id); err != nil {
		t.Fatalf("a second Delete: %v", err)
	}
}

// Two uploads of the same bytes (one photo in two entries) are two
// objects: deleting one leaves the other whole.
func sameContentTwoIDs(t *testing.T, tier Tier) {
	o, _ := tier.Open(t)
	b := body(8 << 10)
	one, two := newID(), newID()
	keep(t, o, one, b)
	keep(t, o, two, b)
	if err := o.Delete(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, tier, o, one)
	if got := Read(t, o, two); !bytes.Equal(got, b) {
		t.Fatal("deleting one upload of a content took the other's bytes")
	}
}

// What one instance keeps the other reads and deletes.
func acrossInstances(t *testing.T, tier Tier) {
	a, b := tier.Open(t)
	data := body(16 << 10)
	id := newID()
	keep(t, a, id, data)
	if got := Read(t, b, id); !bytes.Equal(got, data) {
		t.Fatal("the other instance reads other bytes")
	}
	if err := b.Delete(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, tier, a, id)
}

// One instance deletes an upload while the other keeps a new upload of
// the same bytes (two entries with one photo, one of them forgotten):
// whatever the order, the new upload's bytes stay. On the directory tier
// this is the flock on objects/lock; on a bucket, one key per upload.
func keepAndDeleteAcross(t *testing.T, tier Tier) {
	a, b := tier.Open(t)
	data := body(4 << 10)
	for range 20 {
		old, fresh := newID(), newID()
		keep(t, a, old, data)
		var wg sync.WaitGroup
		var delErr, keepErr error
		wg.Add(2)
		go func() { defer wg.Done(); delErr = a.Delete(context.Background(), old) }()
		p := tempFile(t, fresh, data)
		go func() {
			defer wg.Done()
			keepErr = b.Keep(context.Background(), fresh, p, int64(len(data)), sha256.Sum256(data))
		}()
		wg.Wait()
		if delErr != nil || keepErr != nil {
			t.Fatalf("Delete: %v; Keep: %v", delErr, keepErr)
		}
		wantMissing(t, tier, a, old)
		if got := Read(t, a, fresh); !bytes.Equal(got, data) {
			t.Fatal("a Delete of the same content on the other instance took the new upload's bytes")
		}
	}
}
