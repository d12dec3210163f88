package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/formd/formd/internal/sqlitedb"
)

// BadBackupError lists everything wrong with a backup, so that one run of
// verify says all of it.
type BadBackupError struct {
	Dir      string
	Problems []string
}

func (e *BadBackupError) Error() string {
	return fmt.Sprintf("the backup in %s is not whole:\n  - %s\nrestore from another backup (or take a new one while the data is still there)",
		e.Dir, strings.Join(e.Problems, "\n  - "))
}

// Verify checks a backup without restoring it: its manifest, each file's
// size and SHA-256, and SQLite's integrity check of each database. It
// returns the manifest, and a *BadBackupError naming every problem.
func Verify(ctx context.Context, d Drivers, dir string) (Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return m, err
	}
	bad := &BadBackupError{Dir: dir}
	for _, want := range []string{StoreFile, JournalFile} {
		if _, ok := m.File(want); !ok {
			bad.Problems = append(bad.Problems, fmt.Sprintf("the manifest lists no %s", want))
		}
	}
	if _, ok := m.File(SecretFile); !ok && !m.NoSecret {
		bad.Problems = append(bad.Problems, "the manifest lists no "+SecretFile)
	}
	for _, f := range m.Files {
		if f.Name != filepath.Base(f.Name) || strings.HasPrefix(f.Name, ".") {
			bad.Problems = append(bad.Problems, fmt.Sprintf("the manifest names a file outside the backup: %q", f.Name))
			continue
		}
		path := filepath.Join(dir, f.Name)
		size, sum, err := fileSum(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s is missing", path))
			continue
		case err != nil:
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s cannot be read: %v", path, err))
			continue
		case size != f.Size:
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s has %d bytes, the manifest says %d", path, size, f.Size))
			continue
		case sum != f.SHA256:
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s does not match its SHA-256 in the manifest (it was changed or damaged)", path))
			continue
		}
		if !strings.HasSuffix(f.Name, ".db") {
			continue
		}
		problems, err := sqlitedb.IntegrityCheck(ctx, path)
		if err != nil {
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s fails SQLite's integrity check: %v", path, err))
			continue
		}
		for _, p := range problems {
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s fails SQLite's integrity check: %s", path, p))
		}
		if f.Name != StoreFile && f.Name != JournalFile {
			continue
		}
		if v, err := d.of(f.Name).SchemaVersion(ctx, path); err != nil {
			bad.Problems = append(bad.Problems, err.Error())
		} else if v != f.Schema {
			bad.Problems = append(bad.Problems, fmt.Sprintf("%s has schema version %d, the manifest says %d", path, v, f.Schema))
		}
	}
	bad.Problems = append(bad.Problems, verifyUploads(dir, m)...)
	if len(bad.Problems) > 0 {
		return m, bad
	}
	return m, nil
}

// ReadManifest reads a backup's manifest.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return m, fmt.Errorf("no backup at %s: %w; name the directory formd backup --to wrote", dir, serr)
		}
		return m, fmt.Errorf("%s has no %s: the backup did not finish (it was stopped, or the disk filled), or this is not a formd backup; use another backup",
			dir, ManifestFile)
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s is not a formd backup manifest (%v): the backup is damaged; use another backup", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != manifestFormat && m.Format != manifestFormatPlain {
		return m, fmt.Errorf("%s has manifest format %d, this formd reads format %d: it was written by formd %s; restore it with formd %s or newer",
			filepath.Join(dir, ManifestFile), m.Format, manifestFormat, m.Formd, m.Formd)
	}
	return m, nil
}

func fileSum(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
