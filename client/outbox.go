package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/formd/formd/internal/atomicfile"
)

// Outbox keeps submissions on disk until the server answers them
// definitively, so that a process that dies (or a device that reboots)
// can send them again with the same keys (Client.Resume). Each
// submission is one small file, written atomically (package atomicfile),
// so that a crash leaves either the whole submission or nothing.
//
// One process should use an outbox directory at a time.
type Outbox struct {
	dir string
}

// outboxEntry is the file format of one submission.
type outboxEntry struct {
	Form    string          `json:"form"`
	Key     string          `json:"key"`
	Body    json.RawMessage `json:"body"`
	SavedAt time.Time       `json:"saved_at"`
}

const (
	outboxExt = ".json"
	// legacyTmpPrefix named the temporary files of releases before the
	// outbox used package atomicfile, whose temporary files are
	// "." + name + ".*".
	legacyTmpPrefix = ".tmp-"
)

// isTemp says whether a name in the outbox is a temporary file.
func isTemp(name string) bool {
	return strings.HasPrefix(name, legacyTmpPrefix) ||
		strings.HasPrefix(name, ".") && strings.Contains(name, outboxExt+".")
}

// OpenOutbox opens (and creates, with owner-only permissions) the outbox
// directory. Temporary files that a crash left mid-write are removed:
// their submissions were never handed to the server.
func OpenOutbox(dir string) (*Outbox, error) {
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open outbox: %w", err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open outbox: %w", err)
	}
	for _, n := range names {
		if isTemp(n.Name()) {
			if err := os.Remove(filepath.Join(dir, n.Name())); err != nil {
				return nil, fmt.Errorf("open outbox: remove leftover %s: %w", n.Name(), err)
			}
		}
	}
	return &Outbox{dir: dir}, nil
}

// fileName is derived from the form and key, which may hold characters
// that a file name cannot.
func (o *Outbox) fileName(form, key string) string {
	sum := sha256.Sum256([]byte(form + "\x00" + key))
	return filepath.Join(o.dir, hex.EncodeToString(sum[:16])+outboxExt)
}

// Put saves s durably. Saving the same submission again is harmless.
func (o *Outbox) Put(s Submission) error {
	b, err := json.Marshal(outboxEntry{Form: s.Form, Key: s.Key, Body: s.Body, SavedAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("outbox: encode %s/%s: %w", s.Form, s.Key, err)
	}
	if err := atomicfile.WriteFile(o.fileName(s.Form, s.Key), b, 0o600); err != nil {
		return fmt.Errorf("outbox: save %s/%s: %w", s.Form, s.Key, err)
	}
	return nil
}

// Remove forgets a submission once it is decided. The removal is not
// synced: if a crash brings the file back, Resume asks the server for its
// status and finds it decided.
func (o *Outbox) Remove(form, key string) error {
	if err := os.Remove(o.fileName(form, key)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("outbox: remove %s/%s: %w", form, key, err)
	}
	return nil
}

// Pending lists the submissions still in the outbox, oldest first.
func (o *Outbox) Pending() ([]Submission, error) {
	names, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("outbox: list: %w", err)
	}
	var entries []outboxEntry
	for _, n := range names {
		name := n.Name()
		if n.IsDir() || isTemp(name) || !strings.HasSuffix(name, outboxExt) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(o.dir, name))
		if err != nil {
			return nil, fmt.Errorf("outbox: read %s: %w", name, err)
		}
		var e outboxEntry
		if err := json.Unmarshal(b, &e); err != nil {
			// Files are renamed into place whole, so this is damage from
			// outside; say so rather than drop a submission silently.
			return nil, fmt.Errorf("outbox: %s is not a submission: %w", name, err)
		}
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].SavedAt.Before(entries[j].SavedAt) })
	out := make([]Submission, len(entries))
	for i, e := range entries {
		out[i] = Submission{Form: e.Form, Key: e.Key, Body: e.Body}
	}
	return out, nil
}
