package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/client"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
)

func TestOutboxFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A crash in the middle of a write leaves a temporary file: it holds
	// nothing that was handed to the server, and opening drops it.
	// Earlier releases named it .tmp-*; package atomicfile, .<name>.*.
	leftovers := []string{".tmp-123", ".0123abcd.json.4567"}
	for _, name := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"form":`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	box, err := client.OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range leftovers {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("leftover temp file %s still there: %v", name, err)
		}
	}
	a := client.Submission{Form: "f", Key: "a/b:c", Body: body("a", "13900000000")}
	b := client.Submission{Form: "f", Key: "second", Body: body("b", "13900000001")}
	for _, s := range []client.Submission{a, b, a} {
		if err := box.Put(s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := box.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Key != "a/b:c" || string(got[1].Body) != string(a.Body) {
		t.Fatalf("pending %+v, want b then a (a saved again last), bodies intact", got)
	}
	if err := box.Remove("f", "second"); err != nil {
		t.Fatal(err)
	}
	if err := box.Remove("f", "second"); err != nil {
		t.Errorf("removing twice: %v", err)
	}
	if got, _ := box.Pending(); len(got) != 1 || got[0].Key != "a/b:c" {
		t.Fatalf("after remove: %+v", got)
	}
	// Damage from outside is reported, never skipped silently.
	if err := os.WriteFile(filepath.Join(dir, "0123.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := box.Pending(); err == nil || !strings.Contains(err.Error(), "0123.json") {
		t.Errorf("a damaged file gave %v, want an error naming it", err)
	}
}

// A process that dies before the answer leaves the submission in the
// outbox; the next one resumes it and the server ends with one entry,
// whether or not the first process's request had reached it.
func TestResume(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, testForms, servertest.Options{})
	tests := []struct {
		name              string
		firstTry          []action // what happens to the dying process's POST; nil: it never sent
		attempts, queries int
	}{
		{name: "answer lost, then the process died", firstTry: []action{dropResponse}, attempts: 0, queries: 1},
		{name: "request lost, then the process died", firstTry: []action{dropRequest}, attempts: 1, queries: 1},
		{name: "died before sending", attempts: 1, queries: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			box, err := client.OpenOutbox(dir)
			if err != nil {
				t.Fatal(err)
			}
			sub := client.Submission{Form: "open", Key: client.NewKey(), Body: body("me", newPhone())}
			if tc.firstTry == nil {
				if err := box.Put(sub); err != nil {
					t.Fatal(err)
				}
			} else {
				in := &injector{upstream: h.URL, hc: &http.Client{}, script: map[string][]action{"POST": tc.firstTry}}
				proxy := httptest.NewServer(in)
				defer proxy.Close()
				dying := newClient(t, proxy.URL, client.Options{Outbox: box, Clock: cancelAfter(1),
					HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
				if _, err := dying.Submit(context.Background(), sub); err == nil {
					t.Fatal("the first process got an answer; the test needs it to die first")
				}
			}
			box2, err := client.OpenOutbox(dir)
			if err != nil {
				t.Fatal(err)
			}
			next := newClient(t, h.URL, client.Options{Outbox: box2})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			results, err := next.Resume(ctx)
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if len(results) != 1 || results[0].Outcome != client.Stored || results[0].Key != sub.Key {
				t.Fatalf("resumed %+v, want the submission stored", results)
			}
			if results[0].Attempts != tc.attempts || results[0].StatusQueries != tc.queries {
				t.Errorf("resume took %d POSTs and %d status queries, want %d and %d",
					results[0].Attempts, results[0].StatusQueries, tc.attempts, tc.queries)
			}
			if left, err := box2.Pending(); err != nil || len(left) != 0 {
				t.Errorf("outbox still holds %v (%v)", left, err)
			}
			if got := rows(t, h, "open", sub.Key); len(got) != 1 || got[0].Status != store.StatusStored {
				t.Fatalf("store holds %+v, want one stored entry", got)
			}
		})
	}
}
