package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/atomicfile"
)

// RestoreOptions say which backup to restore where.
type RestoreOptions struct {
	From, Data string
	// Force replaces the embedded files of a data directory that has
	// some; without it such a directory is refused.
	Force bool
	// Version is this formd's; Known the schema version of each database
	// file that this formd knows (KnownSchemas).
	Version string
	Known   map[string]int
	// Lock takes the data directory's lock, as a server does, so that no
	// server runs on it while it is restored (and none is running now).
	Lock func(dir string) (release func(), err error)
}

// NewerError is a backup written by a newer formd than this one.
type NewerError struct {
	From, What         string
	Backup, This       string // versions
	BackupFormd, Formd string
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the backup in %s was written by formd %s (%s %s), newer than this formd %s (which knows %s %s): "+
		"restore it with formd %s or newer; nothing was changed", e.From, e.BackupFormd, e.What, e.Backup, e.Formd, e.What, e.This, e.BackupFormd)
}

// Restore verifies the backup in opts.From — manifest, checksums,
// integrity, versions — before it touches anything, then copies its files
// into opts.Data, each through a synced temporary file and a rename. It
// returns holding the data directory's lock: the caller decides what the
// journal holds beyond the store, then releases it.
func Restore(ctx context.Context, opts RestoreOptions) (Manifest, func(), error) {
	m, err := Verify(ctx, opts.From)
	if err != nil {
		return m, nil, err
	}
	for _, name := range []string{StoreFile, JournalFile} {
		f, _ := m.File(name)
		if known, ok := opts.Known[name]; ok && f.Schema > known {
			return m, nil, &NewerError{From: opts.From, What: name + " schema version", Backup: strconv.Itoa(f.Schema), This: strconv.Itoa(known),
				BackupFormd: m.Formd, Formd: opts.Version}
		}
	}
	if compareVersions(m.Formd, opts.Version) > 0 {
		return m, nil, &NewerError{From: opts.From, What: "release", Backup: m.Formd, This: opts.Version, BackupFormd: m.Formd, Formd: opts.Version}
	}
	if same, err := sameDir(opts.From, opts.Data); err == nil && same {
		return m, nil, fmt.Errorf("the backup %s and --data %s are one directory: restore into a new directory", opts.From, opts.Data)
	}
	held, err := heldFiles(opts.Data)
	if err != nil {
		return m, nil, err
	}
	_, statErr := os.Stat(opts.Data)
	existed := statErr == nil
	if len(held) > 0 && !opts.Force {
		// A server's directory is refused as that, not as "not empty":
		// try its lock (the file is there already, so nothing is made).
		if _, err := os.Stat(filepath.Join(opts.Data, "formd.lock")); err == nil {
			release, err := opts.Lock(opts.Data)
			if err != nil {
				return m, nil, fmt.Errorf("refusing to restore into %s: %w; nothing was changed", opts.Data, err)
			}
			release()
		}
		return m, nil, fmt.Errorf("%s is not empty (it holds %s): restore into a new directory, or add --force to replace its journal, store, secret and uploaded files; nothing was changed",
			opts.Data, strings.Join(held, ", "))
	}
	release, err := opts.Lock(opts.Data)
	if err != nil {
		return m, nil, fmt.Errorf("refusing to restore into %s: %w; nothing was changed", opts.Data, err)
	}
	ok := false
	defer func() {
		if !ok {
			release()
			if !existed {
				os.RemoveAll(opts.Data) //nolint:errcheck // only what this restore made
			}
		}
	}()
	if len(held) > 0 {
		for _, name := range []string{StoreFile, JournalFile} {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(filepath.Join(opts.Data, name+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return m, nil, fmt.Errorf("--force: remove %s: %w", filepath.Join(opts.Data, name+suffix), err)
				}
			}
		}
		// The uploaded files go with the store that named them: left
		// beside the backup's, they would be bytes no entry references
		// (and an id the backup reuses would clash).
		if err := os.RemoveAll(filepath.Join(opts.Data, "uploads")); err != nil {
			return m, nil, fmt.Errorf("--force: remove %s: %w", filepath.Join(opts.Data, "uploads"), err)
		}
	}
	for _, f := range m.Files {
		if err := installFile(filepath.Join(opts.From, f.Name), filepath.Join(opts.Data, f.Name), f); err != nil {
			return m, nil, err
		}
	}
	if err := restoreUploads(opts.From, opts.Data, m); err != nil {
		return m, nil, err
	}
	ok = true
	return m, release, nil
}

// installFile copies one file of a backup into place, checking its sum
// again on the way (the backup may sit on a disk that fails as it is
// read).
func installFile(src, dst string, want File) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore %s: %w", src, err)
	}
	defer in.Close()
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".restore-*")
	if err != nil {
		return fmt.Errorf("restore into %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("restore %s: %w", dst, err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), in); err != nil {
		return fmt.Errorf("restore %s: %w", dst, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fmt.Errorf("restore %s: %s changed while it was read (SHA-256 %s, the manifest says %s); nothing usable was written", dst, src, got, want.SHA256)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("restore %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("restore %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("restore %s: %w", dst, err)
	}
	return atomicfile.SyncDir(dir)
}

// heldFiles lists what a data directory holds but its lock file; nothing
// when it does not exist.
func heldFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var held []string
	for _, e := range entries {
		if e.Name() != "formd.lock" {
			held = append(held, e.Name())
		}
	}
	return held, nil
}

func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// compareVersions compares two releases written vMAJOR.MINOR.PATCH (a
// suffix after '-' or '+' ignored): -1, 0 or 1; 0 also when either is
// not a release (a development build), which the schema versions decide
// instead.
func compareVersions(a, b string) int {
	pa, oka := parseVersion(a)
	pb, okb := parseVersion(b)
	if !oka || !okb {
		return 0
	}
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] > pb[i] {
				return 1
			}
			return -1
		}
	}
	return 0
}

func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	s, ok := strings.CutPrefix(v, "v")
	if !ok {
		return out, false
	}
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// KnownSchemas reads the schema version this formd gives each database
// file, by opening fresh ones with today's drivers in a temporary
// directory (open makes the newest schema). The caller passes the open
// function (the server's drivers), so this package needs none of them.
func KnownSchemas(ctx context.Context, open func(ctx context.Context, dir string) error) (map[string]int, error) {
	dir, err := os.MkdirTemp("", "formd-schema-*")
	if err != nil {
		return nil, fmt.Errorf("read this formd's schema versions: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := open(ctx, dir); err != nil {
		return nil, fmt.Errorf("read this formd's schema versions: %w", err)
	}
	out := map[string]int{}
	for _, name := range []string{StoreFile, JournalFile} {
		v, err := schemaVersion(ctx, filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}
