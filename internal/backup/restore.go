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
	"strconv"
	"strings"
	"syscall"

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
	// Drivers read the backup's database files.
	Drivers Drivers
	// Lock takes the data directory's lock, as a server does, so that no
	// server runs on it while it is restored (and none is running now).
	Lock func(dir string) (release func(), err error)
	// Settle, when set, is run on the staged copy (a whole data
	// directory beside --data) before anything of --data is moved: it
	// decides what the journal holds beyond the store and audits the
	// result (formd restore's settle). A failure undoes the restore. So
	// a restore that is stopped after its files are in is settled too,
	// and a stop before is staged (and settled) again by --resume.
	Settle func(ctx context.Context, dir string) error
	// Kill, when set (tests only), is told each step of a restore,
	// resume or abort once it is done; true stops it there as a kill -9
	// would: nothing undone, the marker left, ErrKilled returned.
	Kill func(step string) bool
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
// integrity, versions — before it touches anything, then puts its files
// into opts.Data all or nothing (see restoring). It returns holding the
// data directory's lock: the caller decides what the journal holds
// beyond the store, then releases it. On an error the data directory is
// put back as it was, or, if even that fails, left marked for formd
// restore --resume or --abort (a *RestoringError says which).
func Restore(ctx context.Context, opts RestoreOptions) (Manifest, func(), error) {
	m, err := Verify(ctx, opts.Drivers, opts.From)
	if err != nil {
		return m, nil, err
	}
	if err := CheckRestorable(opts.From, m, opts.Known, opts.Version); err != nil {
		return m, nil, err
	}
	if same, err := sameDir(opts.From, opts.Data); err == nil && same {
		return m, nil, fmt.Errorf("the backup %s and --data %s are one directory: restore into a new directory", opts.From, opts.Data)
	}
	if err := CheckNotRestoring(opts.Data); err != nil {
		return m, nil, err
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
	r := restoring{From: opts.From, Step: stepStaging, Created: !existed, Manifest: m}
	r.Staging, r.Aside, err = workDirs(opts.Data)
	for _, d := range []string{r.Staging, r.Aside} {
		if _, serr := os.Lstat(d); err == nil && serr == nil {
			// No restore leaves one without its marker: it is not ours.
			err = fmt.Errorf("%s is in the way (a restore works there): move it away", d)
		}
	}
	if err == nil {
		err = r.save(opts.Data)
	}
	if err != nil {
		release()
		if !existed {
			os.RemoveAll(opts.Data) //nolint:errcheck // only what this restore made
		}
		return m, nil, fmt.Errorf("restore into %s: %w; nothing was changed", opts.Data, err)
	}
	if err := finish(ctx, opts, &r); err != nil {
		if errors.Is(err, ErrKilled) {
			release()
			return m, nil, err
		}
		if aerr := undo(opts.Data, &r, opts.Kill); aerr != nil {
			release()
			return m, nil, &RestoringError{Data: opts.Data, Err: errors.Join(err, aerr)}
		}
		release()
		return m, nil, fmt.Errorf("%w; the restore was undone: %s holds what it held before", err, opts.Data)
	}
	return m, release, nil
}

// CheckRestorable is what a verified backup (Verify) must also be for
// this binary to restore it: no file of a newer schema than known (the
// schemas this build knows) and no newer release than version. Restore
// and formd backup verify both ask it, so that verify never passes a
// backup that restore refuses.
func CheckRestorable(from string, m Manifest, known map[string]int, version string) error {
	for _, name := range []string{StoreFile, JournalFile} {
		f, _ := m.File(name)
		if k, ok := known[name]; ok && f.Schema > k {
			return &NewerError{From: from, What: name + " schema version", Backup: strconv.Itoa(f.Schema), This: strconv.Itoa(k),
				BackupFormd: m.Formd, Formd: version}
		}
	}
	if compareVersions(m.Formd, version) > 0 {
		return &NewerError{From: from, What: "release", Backup: m.Formd, This: version, BackupFormd: m.Formd, Formd: version}
	}
	return nil
}

// The files of a data directory that a restore leaves where they are,
// and its marker.
const (
	lockFile = "formd.lock"
	// RestoringFile marks a data directory that a restore is putting
	// files into: written before anything else, removed last. Commands
	// that open the data refuse it (CheckNotRestoring).
	RestoringFile = "RESTORING"
)

// The steps of a restore, recorded in the marker as each begins.
const (
	stepStaging = "staging"     // the backup's files are copied into Staging
	stepAside   = "moving-old"  // the data's own files are moved into Aside
	stepIn      = "moving-new"  // Staging's files are moved into the data
	stepClean   = "cleaning-up" // Staging and Aside are removed
)

// restoring is the marker's content: what a restore in progress does and
// how far it got. A restore is all or nothing: the backup is copied into
// a staging directory beside the data (inside it when the data directory
// is a mount point, so that every move is a rename on one disk); then
// the data's own files are moved aside, the staged ones moved in, and
// only then the old ones deleted. Killed at any step, the marker says
// which: --resume finishes it (all new), --abort undoes it (all old).
type restoring struct {
	From     string   `json:"from"`
	Staging  string   `json:"staging"`
	Aside    string   `json:"aside"`
	Step     string   `json:"step"`
	Created  bool     `json:"created_data_dir,omitempty"`
	Manifest Manifest `json:"manifest"`
}

func (r *restoring) save(data string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(data, RestoringFile), append(raw, '\n'), 0o600)
}

func readRestoring(data string) (restoring, error) {
	var r restoring
	raw, err := os.ReadFile(filepath.Join(data, RestoringFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", filepath.Join(data, RestoringFile), err)
	}
	switch r.Step {
	case stepStaging, stepAside, stepIn, stepClean:
	default:
		return r, fmt.Errorf("%s names no step of a restore (%q)", filepath.Join(data, RestoringFile), r.Step)
	}
	return r, nil
}

// ErrKilled is a restore stopped by RestoreOptions.Kill.
var ErrKilled = errors.New("restore stopped by the test as a kill would")

// RestoringError is a data directory a restore did not finish putting
// files into.
type RestoringError struct {
	Data string
	Err  error // why the restore stopped, when this run saw it
}

func (e *RestoringError) Error() string {
	why := ""
	if e.Err != nil {
		why = fmt.Sprintf(" (%v)", e.Err)
	}
	return fmt.Sprintf("a restore into %s did not finish%s: its %s marker is there, so no formd opens it; "+
		"finish it with formd restore --resume --data %s (the backup's data), or undo it with formd restore --abort --data %s (the data as it was)",
		e.Data, why, RestoringFile, e.Data, e.Data)
}

func (e *RestoringError) Unwrap() error { return e.Err }

// CheckNotRestoring fails with a *RestoringError when a restore into the
// data directory has not finished: what formd serve, formd backup and
// every command that opens --data call first.
func CheckNotRestoring(data string) error {
	_, err := os.Lstat(filepath.Join(data, RestoringFile))
	switch {
	case err == nil:
		return &RestoringError{Data: data}
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("read the data directory %s: %w", data, err)
	}
}

// workDirs chooses the staging and aside directories of a restore into
// data: siblings of it, or inside it when data is a mount point (a
// rename cannot cross disks).
func workDirs(data string) (staging, aside string, err error) {
	abs, err := filepath.Abs(data)
	if err != nil {
		return "", "", err
	}
	parent, base := filepath.Dir(abs), filepath.Base(abs)
	fd, err := os.Stat(abs)
	if err != nil {
		return "", "", err
	}
	fp, err := os.Stat(parent)
	if err != nil {
		return "", "", err
	}
	sd, ok1 := fd.Sys().(*syscall.Stat_t)
	sp, ok2 := fp.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || sd.Dev != sp.Dev || parent == abs {
		return filepath.Join(abs, ".restore-new"), filepath.Join(abs, ".restore-old"), nil
	}
	return filepath.Join(parent, "."+base+".restore-new"), filepath.Join(parent, "."+base+".restore-old"), nil
}

// own says a name in the data directory is one of the files a restore
// replaces: the databases (with their WAL, shared-memory and rollback
// files), the secret and the uploads. Anything else there (the lock,
// the marker, a file of the owner's) stays where it is.
func own(name string) bool {
	for _, db := range []string{StoreFile, JournalFile} {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if name == db+suffix {
				return true
			}
		}
	}
	return name == SecretFile || name == UploadsDir
}

// finish runs a restore from the step its marker records to the end.
func finish(ctx context.Context, opts RestoreOptions, r *restoring) error {
	data := opts.Data
	step := func(name string) error {
		if opts.Kill != nil && opts.Kill(name) {
			return ErrKilled
		}
		return nil
	}
	next := func(s string) error {
		r.Step = s
		if err := r.save(data); err != nil {
			return fmt.Errorf("restore into %s: %w", data, err)
		}
		return step("step " + s)
	}
	if err := step("marker " + r.Step); err != nil {
		return err
	}
	if r.Step == stepStaging {
		if err := stage(ctx, opts, r, step); err != nil {
			return err
		}
		if err := next(stepAside); err != nil {
			return err
		}
	}
	if r.Step == stepAside {
		if err := os.MkdirAll(r.Aside, 0o700); err != nil {
			return fmt.Errorf("restore: make %s: %w", r.Aside, err)
		}
		if err := atomicfile.SyncDir(filepath.Dir(r.Aside)); err != nil {
			return fmt.Errorf("restore: sync %s: %w", filepath.Dir(r.Aside), err)
		}
		if err := moveAll(data, r.Aside, own, step); err != nil {
			return err
		}
		if err := next(stepIn); err != nil {
			return err
		}
	}
	if r.Step == stepIn {
		if err := moveAll(r.Staging, data, func(string) bool { return true }, step); err != nil {
			return err
		}
		if err := next(stepClean); err != nil {
			return err
		}
	}
	// stepClean: the new files are all in; the old ones go.
	for _, d := range []string{r.Staging, r.Aside} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("restore: remove %s: %w", d, err)
		}
		if err := step("removed " + filepath.Base(d)); err != nil {
			return err
		}
	}
	return unmark(data)
}

// unmark removes the marker, last.
func unmark(data string) error {
	if err := os.Remove(filepath.Join(data, RestoringFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: remove the marker %s: %w", filepath.Join(data, RestoringFile), err)
	}
	if err := atomicfile.SyncDir(data); err != nil {
		return fmt.Errorf("restore: sync %s: %w", data, err)
	}
	return nil
}

// stage copies the backup's files into the staging directory, from
// scratch: whatever an earlier, killed run left there is removed first.
func stage(ctx context.Context, opts RestoreOptions, r *restoring, step func(string) error) error {
	if err := os.RemoveAll(r.Staging); err != nil {
		return fmt.Errorf("restore: remove %s: %w", r.Staging, err)
	}
	if err := os.MkdirAll(r.Staging, 0o700); err != nil {
		return fmt.Errorf("restore: make %s: %w", r.Staging, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(r.Staging)); err != nil {
		return fmt.Errorf("restore: sync %s: %w", filepath.Dir(r.Staging), err)
	}
	for _, f := range r.Manifest.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := installFile(filepath.Join(r.From, f.Name), filepath.Join(r.Staging, f.Name), f); err != nil {
			return err
		}
		if err := step("staged " + f.Name); err != nil {
			return err
		}
	}
	if err := restoreUploads(r.From, r.Staging, r.Manifest); err != nil {
		return err
	}
	if r.Manifest.UploadsElsewhere == "" {
		// The uploads the backup left out (no entry claimed or named
		// them) lose their records too, so no submission claims a file
		// that is not there.
		kept := map[string]bool{}
		for _, u := range r.Manifest.Uploads {
			for _, id := range u.IDs {
				kept[id] = true
			}
		}
		if err := opts.Drivers.Store.DropUploads(ctx, filepath.Join(r.Staging, StoreFile), kept); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if err := step("staged uploads"); err != nil {
		return err
	}
	if opts.Settle != nil {
		if err := opts.Settle(ctx, r.Staging); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if err := step("settled"); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(r.Staging)
}

// moveAll renames every entry of from that move selects into to, each
// durable before the next (so a kill leaves each in one place or the
// other), then syncs both.
func moveAll(from, to string, move func(name string) bool, step func(string) error) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("restore: read %s: %w", from, err)
	}
	for _, e := range entries {
		if !move(e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return fmt.Errorf("restore: move %s into %s: %w", filepath.Join(from, e.Name()), to, err)
		}
		if err := errors.Join(atomicfile.SyncDir(to), atomicfile.SyncDir(from)); err != nil {
			return fmt.Errorf("restore: sync %s: %w", to, err)
		}
		if err := step("moved " + e.Name() + " into " + filepath.Base(to)); err != nil {
			return err
		}
	}
	return nil
}

// undo puts a data directory back as it was before a restore that has
// not reached its last step: the staged and any moved-in files go, the
// old ones come back.
func undo(data string, r *restoring, crash func(string) bool) error {
	step := func(name string) error {
		if crash != nil && crash(name) {
			return ErrKilled
		}
		return nil
	}
	if r.Step == stepClean {
		return fmt.Errorf("the backup's files are all in %s already and only the old ones are left to delete: finish it with formd restore --resume --data %s", data, data)
	}
	if r.Step == stepIn {
		// Every file of the data's own is aside: what is here came from
		// the staging directory, a copy of the backup.
		entries, err := os.ReadDir(data)
		if err != nil {
			return fmt.Errorf("undo the restore: read %s: %w", data, err)
		}
		for _, e := range entries {
			if !own(e.Name()) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(data, e.Name())); err != nil {
				return fmt.Errorf("undo the restore: remove %s: %w", filepath.Join(data, e.Name()), err)
			}
			if err := step("undo removed " + e.Name()); err != nil {
				return err
			}
		}
		if err := atomicfile.SyncDir(data); err != nil {
			return fmt.Errorf("undo the restore: sync %s: %w", data, err)
		}
		// From here the data's own files here are old ones, as while
		// they were moved aside: an undo stopped now starts again there.
		r.Step = stepAside
		if err := r.save(data); err != nil {
			return fmt.Errorf("undo the restore: %w", err)
		}
		if err := step("undo step " + stepAside); err != nil {
			return err
		}
	}
	if _, err := os.Stat(r.Aside); err == nil {
		if err := moveAll(r.Aside, data, func(string) bool { return true }, step); err != nil {
			return err
		}
	}
	for _, d := range []string{r.Staging, r.Aside} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("undo the restore: remove %s: %w", d, err)
		}
	}
	if err := step("undo removed the work directories"); err != nil {
		return err
	}
	if err := unmark(data); err != nil {
		return err
	}
	if r.Created {
		os.RemoveAll(data) //nolint:errcheck // the restore made it: nothing else is in it
	}
	return nil
}

// Resume finishes a restore into opts.Data that did not finish (killed,
// or the machine lost power): from the step its marker records, so that
// the data is the backup's. Only Data, Lock and Drivers of opts are
// used. Like Restore it returns holding the lock.
func Resume(ctx context.Context, opts RestoreOptions) (Manifest, func(), error) {
	r, release, err := lockRestoring(opts)
	if err != nil {
		return r.Manifest, nil, err
	}
	if r.Step == stepStaging {
		// The staging copy is made again from the backup: check it again.
		if _, err := Verify(ctx, opts.Drivers, r.From); err != nil {
			release()
			return r.Manifest, nil, fmt.Errorf("cannot finish the restore into %s: %w; undo it with formd restore --abort --data %s", opts.Data, err, opts.Data)
		}
	}
	if err := finish(ctx, opts, &r); err != nil {
		release()
		if errors.Is(err, ErrKilled) {
			return r.Manifest, nil, err
		}
		return r.Manifest, nil, &RestoringError{Data: opts.Data, Err: err}
	}
	return r.Manifest, release, nil
}

// Abort undoes a restore into opts.Data that did not finish, so that the
// data directory holds what it held before (nothing, if the restore made
// it). A restore past its last move cannot be undone: it is finished.
func Abort(opts RestoreOptions) error {
	r, release, err := lockRestoring(opts)
	if err != nil {
		return err
	}
	defer release()
	if err := undo(opts.Data, &r, opts.Kill); err != nil {
		if errors.Is(err, ErrKilled) {
			return err
		}
		return &RestoringError{Data: opts.Data, Err: err}
	}
	return nil
}

func lockRestoring(opts RestoreOptions) (restoring, func(), error) {
	if _, err := os.Lstat(filepath.Join(opts.Data, RestoringFile)); errors.Is(err, fs.ErrNotExist) {
		return restoring{}, nil, fmt.Errorf("%s has no %s marker: no restore into it is unfinished; nothing was changed", opts.Data, RestoringFile)
	}
	release, err := opts.Lock(opts.Data)
	if err != nil {
		return restoring{}, nil, fmt.Errorf("refusing to touch %s: %w; nothing was changed", opts.Data, err)
	}
	r, err := readRestoring(opts.Data)
	if err != nil {
		release()
		return r, nil, err
	}
	return r, release, nil
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
		if e.Name() != lockFile && e.Name() != RestoringFile {
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
func KnownSchemas(ctx context.Context, d Drivers, open func(ctx context.Context, dir string) error) (map[string]int, error) {
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
		v, err := d.of(name).SchemaVersion(ctx, filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}
