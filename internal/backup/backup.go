// Package backup copies the embedded tier's data — the store, the journal
// and the installation secret under --data — into a backup directory
// while a server goes on writing them, checks a backup without restoring
// it, and restores one into a new data directory. It also runs backups on
// a schedule inside the server (Schedule).
//
// A backup is whole or it is not a backup: every file is written to a
// temporary name, synced and renamed, and the manifest — versions, sizes,
// SHA-256 of each file, entry counts — is written last. The store is
// copied before the journal, so the journal is never behind the store: a
// restore decides what the journal holds beyond it. Then come the bytes
// of the uploads that the store's copy names (uploads.go), one file per
// content named by its SHA-256; an upload erased in between is listed in
// the manifest as gone. With --uploads s3://… the manifest says the
// bucket's files are not in the backup. The databases are copied, counted
// and read through their drivers' packages (Drivers): this package knows
// no table of theirs, so a data directory of any release backs up.
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
	"syscall"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
)

// The files of the embedded tier, under --data and in a backup.
const (
	StoreFile    = "store.db"
	JournalFile  = "journal.db"
	SecretFile   = "secret"
	ManifestFile = "manifest.json"
)

// manifestFormat is the version of the manifest's layout: 2 for a backup
// that holds uploads' bytes (a formd that reads only 1 would restore it
// without them, so it refuses it), 1 otherwise.
const (
	manifestFormat      = 2
	manifestFormatPlain = 1
)

// Manifest describes one backup: what wrote it, when, and each file.
type Manifest struct {
	Format   int       `json:"format"`
	Formd    string    `json:"formd_version"`
	Commit   string    `json:"commit,omitempty"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at"`
	Files    []File    `json:"files"`
	// Entries counts the store's entries by status; Journaled the
	// journal's entries (each acknowledged to its submitter).
	Entries   map[string]int `json:"entries"`
	Journaled int            `json:"journal_entries"`
	// NoSecret says the secret was not under --data (it was given with
	// --secret / FORMD_SECRET) and is not in the backup.
	NoSecret bool `json:"no_secret,omitempty"`
	// Uploads are the bytes of the uploads the store's copy references
	// (claimed by an entry whose data is kept), one file per content
	// under uploads/. Uploads no entry claimed yet are not copied: a
	// stranger's uploads do not fill the backups (issue 30).
	Uploads []Upload `json:"uploads,omitempty"`
	// UploadsGone lists uploads the store's copy references whose bytes
	// were erased (forget, retention, expiry) between the copy of the
	// store and theirs; UploadsDamaged those whose bytes in --data no
	// longer had their SHA-256 (formd audit names the file). Neither is
	// in the backup.
	UploadsGone    []string `json:"uploads_gone,omitempty"`
	UploadsDamaged []string `json:"uploads_damaged,omitempty"`
	// UploadsElsewhere names where complete uploads' bytes live when
	// that is not --data (--uploads s3://…): they are not in this
	// backup; the bucket's own versioning or replication keeps them.
	UploadsElsewhere string `json:"uploads_elsewhere,omitempty"`
}

// File is one file of a backup.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Schema is the file's schema version (databases only).
	Schema int `json:"schema_version,omitempty"`
}

// File returns the manifest's entry for a name.
func (m Manifest) File(name string) (File, bool) {
	for _, f := range m.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Options say what to back up, where, and what wrote it.
type Options struct {
	// Data is the data directory (--data); To the backup directory, new
	// or empty.
	Data, To string
	// Drivers copy and read the store's and the journal's files.
	Drivers Drivers
	// Version and Commit name the formd that takes the backup (from the
	// build's information when empty).
	Version, Commit string
	Now             func() time.Time
	// Progress, when set, hears of each file once it is in place, and
	// UploadProgress of each upload's content file.
	Progress       func(f File)
	UploadProgress func(u Upload)
	// UploadsElsewhere, when set, names where complete uploads' bytes
	// live instead of --data (the --uploads bucket): they are not copied
	// and the manifest says so.
	UploadsElsewhere string
	// LinkFrom, when set, is an earlier backup of the same data: a
	// content file it holds is hard-linked from there rather than
	// copied (the scheduled backups under one --backup-dir).
	LinkFrom string
	// freeSpace reads the bytes free under a directory (tests replace it).
	freeSpace func(dir string) (int64, error)
}

// Take writes a backup of opts.Data into opts.To. On an error nothing of
// the backup is left behind but the directory, and the data is untouched:
// the live files are only ever read. It works at the lowest CPU priority
// (on Linux), so that intake beside it keeps the processor.
func Take(ctx context.Context, opts Options) (m Manifest, err error) {
	lowPriority(func() { m, err = take(ctx, opts) })
	return m, err
}

func take(ctx context.Context, opts Options) (m Manifest, err error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.freeSpace == nil {
		opts.freeSpace = freeSpace
	}
	if opts.Version == "" {
		opts.Version, opts.Commit = release.Version(), release.Commit()
	}
	m = Manifest{Format: manifestFormat, Formd: opts.Version, Commit: opts.Commit, Started: opts.Now().UTC()}
	need, err := liveSize(opts.Data)
	if err != nil {
		return m, err
	}
	created, err := prepareDir(opts.To)
	if err != nil {
		return m, err
	}
	var written []string
	defer func() {
		if err == nil {
			return
		}
		for _, p := range written {
			os.Remove(p) //nolint:errcheck // best effort: a failed backup leaves nothing
		}
		os.RemoveAll(filepath.Join(opts.To, UploadsDir)) //nolint:errcheck // this backup's: the directory was empty
		if created {
			os.RemoveAll(opts.To) //nolint:errcheck // this backup made it: nothing else is in it
		}
	}()
	if free, ferr := opts.freeSpace(opts.To); ferr == nil && free < need {
		return m, &DiskFullError{Dir: opts.To, Need: need, Free: free}
	}
	// The store first: whatever it holds was journaled before it, so a
	// journal copied after it holds all of it and more.
	for _, name := range []string{StoreFile, JournalFile} {
		f, err := copyDB(ctx, opts.Drivers.of(name), filepath.Join(opts.Data, name), filepath.Join(opts.To, name), need)
		if err != nil {
			return m, err
		}
		written = append(written, filepath.Join(opts.To, name))
		m.Files = append(m.Files, f)
		if opts.Progress != nil {
			opts.Progress(f)
		}
	}
	secret, err := os.ReadFile(filepath.Join(opts.Data, SecretFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m.NoSecret = true
	case err != nil:
		return m, fmt.Errorf("read the secret %s: %w", filepath.Join(opts.Data, SecretFile), err)
	default:
		dst := filepath.Join(opts.To, SecretFile)
		if err := atomicfile.WriteFile(dst, secret, 0o600); err != nil {
			return m, writeError(opts.To, need, err)
		}
		written = append(written, dst)
		f := File{Name: SecretFile, Size: int64(len(secret)), SHA256: hexSum(secret)}
		m.Files = append(m.Files, f)
		if opts.Progress != nil {
			opts.Progress(f)
		}
	}
	// Then the uploads' bytes that the store's copy names: an upload
	// erased since the store was copied is reported, not a failure.
	m.Format = manifestFormatPlain
	if opts.UploadsElsewhere != "" {
		m.UploadsElsewhere = opts.UploadsElsewhere
	} else {
		refs, err := referencedUploads(ctx, opts.Drivers, filepath.Join(opts.To, StoreFile), filepath.Join(opts.To, JournalFile))
		if err != nil {
			return m, err
		}
		var size int64
		for _, r := range refs {
			size += r.size
		}
		if free, ferr := opts.freeSpace(opts.To); ferr == nil && free < size {
			return m, &DiskFullError{Dir: opts.To, Need: need + size, Free: free}
		}
		rep, err := copyUploads(ctx, opts.Data, opts.To, refs, opts.LinkFrom, need+size, opts.UploadProgress)
		written = append(written, rep.written...)
		if err != nil {
			return m, err
		}
		m.Uploads, m.UploadsGone, m.UploadsDamaged = rep.files, rep.gone, rep.damaged
		if len(m.Uploads) > 0 {
			m.Format = manifestFormat
		}
	}
	if m.Entries, err = opts.Drivers.Store.EntryCounts(ctx, filepath.Join(opts.To, StoreFile)); err != nil {
		return m, err
	}
	if m.Journaled, err = opts.Drivers.Journal.EntryCount(ctx, filepath.Join(opts.To, JournalFile)); err != nil {
		return m, err
	}
	m.Finished = opts.Now().UTC()
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	dst := filepath.Join(opts.To, ManifestFile)
	if err := atomicfile.WriteFile(dst, append(raw, '\n'), 0o600); err != nil {
		return m, writeError(opts.To, need, err)
	}
	written = append(written, dst)
	return m, nil
}

// liveSize is what the data's databases take on disk with their WALs: no
// copy is bigger.
func liveSize(data string) (int64, error) {
	if err := CheckNotRestoring(data); err != nil {
		return 0, err
	}
	var n int64
	for _, name := range []string{StoreFile, JournalFile} {
		fi, err := os.Stat(filepath.Join(data, name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return 0, fmt.Errorf("no %s in %s: this is not an embedded formd data directory (--data, FORMD_DATA); "+
					"with a postgres:// store or a nats:// journal back up with their own tools (docs/backups-and-upgrades.md)", name, data)
			}
			return 0, fmt.Errorf("read the data directory %s: %w", data, err)
		}
		n += fi.Size()
		if wal, err := os.Stat(filepath.Join(data, name+"-wal")); err == nil {
			n += wal.Size()
		}
	}
	return n, nil
}

// prepareDir makes the backup directory, or checks that it is empty and
// writable. It says whether it made it.
func prepareDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
			return false, fmt.Errorf("cannot make the backup directory %s: %w; choose a directory this user can write, or make it writable", dir, err)
		}
		created = true
	case err != nil:
		return false, fmt.Errorf("cannot read the backup directory %s: %w; choose a directory this user can write", dir, err)
	case len(entries) > 0:
		return false, fmt.Errorf("the backup directory %s is not empty: name a new directory for each backup (formd never writes over one)", dir)
	}
	probe, err := os.CreateTemp(dir, ".formd-probe-*")
	if err != nil {
		if created {
			os.Remove(dir) //nolint:errcheck // only if still empty
		}
		return false, fmt.Errorf("cannot write in the backup directory %s: %w; choose a directory this user can write, or make it writable", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name()) //nolint:errcheck // a probe
	return created, nil
}

// copyDB copies one live database into place in the backup: to a
// temporary name, synced, summed and renamed.
func copyDB(ctx context.Context, d copier, src, dst string, need int64) (File, error) {
	dir := filepath.Dir(dst)
	tmp := filepath.Join(dir, "."+filepath.Base(dst)+".partial")
	removeTmp := func() {
		for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
			os.Remove(tmp + suffix) //nolint:errcheck // a leftover, or gone after the rename
		}
	}
	removeTmp() // a leftover of a killed backup
	defer removeTmp()
	if err := d.Copy(ctx, src, tmp); err != nil {
		return File{}, writeError(dir, need, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return File{}, fmt.Errorf("open the copy %s: %w", tmp, err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return File{}, fmt.Errorf("restrict the copy %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return File{}, writeError(dir, need, fmt.Errorf("sync %s: %w", tmp, err))
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, fmt.Errorf("read the copy %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return File{}, writeError(dir, need, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return File{}, writeError(dir, need, err)
	}
	v, err := d.SchemaVersion(ctx, dst)
	if err != nil {
		return File{}, err
	}
	return File{Name: filepath.Base(dst), Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Schema: v}, nil
}

// DiskFullError is a backup that did not fit.
type DiskFullError struct {
	Dir        string
	Need, Free int64 // bytes; Free is -1 when unknown
}

func (e *DiskFullError) Error() string {
	free := ""
	if e.Free >= 0 {
		free = fmt.Sprintf(", %d free", e.Free)
	}
	return fmt.Sprintf("the disk of the backup directory %s is full (the backup needs up to %d bytes%s): free space there or choose a bigger disk; "+
		"nothing of this backup was kept and the data is untouched", e.Dir, e.Need, free)
}

// writeError turns a full disk into a DiskFullError, and names the
// directory in any other error.
func writeError(dir string, need int64, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || sqlitedb.IsFull(err) {
		free, ferr := freeSpace(dir)
		if ferr != nil {
			free = -1
		}
		return &DiskFullError{Dir: dir, Need: need, Free: free}
	}
	return fmt.Errorf("write the backup in %s: %w", dir, err)
}

// freeSpace reads the bytes an unprivileged writer may still use under dir.
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
