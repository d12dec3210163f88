// Package powercut is a FUSE filesystem for tests that loses, when the
// "power is cut", every change not yet made durable by fsync — as
// Jepsen's LazyFS does. A kill -9 keeps the kernel's page cache, so a
// program that forgets an fsync survives it; a power cut does not, and
// this filesystem shows the difference on an ordinary machine.
//
// Operations pass through to a backing directory at once (reads see
// every write, as on a real filesystem before a crash), and the
// filesystem keeps, in memory, what it needs to undo each change that
// is not yet durable. Cut refuses every further change, unmounts, and
// undoes the pending ones, newest first: the backing directory then
// holds what was synced, and Mount serves it again.
//
// # The model
//
// File data. A write, truncate or fallocate changes a file's data; it
// is durable once fsync or fdatasync is called on that file (any
// descriptor of it), or at once for a descriptor opened with O_SYNC or
// O_DSYNC. The first change to a 4 KiB block since the file's last
// sync saves the block's synced contents, and the file's synced size;
// a cut puts them back and truncates the file to that size. So a cut
// loses every unsynced write whole: there are no torn writes within a
// block, and no reordering that keeps a later unsynced write while
// losing an earlier one (both are lost).
//
// Directory entries. Creating a file, directory, node or symlink,
// link, unlink, rmdir and rename change a directory; each is durable
// once the directory is fsynced (for a rename, the directory of the new
// name: the rename is then durable whole, both names, as journaling
// filesystems make it). fsync of a file does not make its name durable
// (fsync(2): "an explicit fsync() on a file descriptor for the
// directory is also needed"). A cut undoes the pending ones newest
// first: a created name goes (a directory with all beneath it), an
// unlinked or replaced file comes back (it is kept as a hard link in a
// trash directory beside the backing one until its unlink is durable),
// a renamed name goes back. Undoing is by path; when a durable change
// sits between pending ones that touch the same names, the undo is
// best-effort and what it could not do is reported by Cut.
//
// Directories are known by their backing inode numbers: a removed
// directory's number reused for a new one while changes in the old one
// are pending could let an fsync of the new one make them durable (a
// durable removal of a directory drops the pending changes in it, which
// narrows this to the removals not yet durable).
//
// Not modelled: metadata other than size (mode, owner, times, xattrs
// are passed through and kept), writes through shared mmap are data
// like any write, and syncfs(2) or sync(2), which FUSE does not see,
// make nothing durable.
package powercut

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	iofs "io/fs"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const blockSize = 4096

// FS is one mount of a backing directory.
type FS struct {
	dir    string
	mnt    string
	root   string // the backing directory
	trash  string // unlinked files kept until their unlink is durable
	server *fuse.Server
	st     *state
}

// state is the pending (not yet durable) changes of one mount.
type state struct {
	root, trash string

	mu      sync.Mutex
	cut     bool
	files   map[uint64]*fileUndo // by backing inode number
	log     []*entryUndo         // directory changes, oldest first
	trashN  int
	syncs   int // fsyncs seen, for tests that want to know
	pending int // changes recorded since the mount, for the same
	lost    int // changes the cut undid
}

// fileUndo is the synced state of one file's data.
type fileUndo struct {
	f      *os.File // the backing file, open for the cut
	size   int64
	blocks map[int64][]byte // block index → synced bytes (short at the synced end)
}

type entryKind int

const (
	created  entryKind = iota + 1 // a new name: path
	removed                       // an unlinked file kept at trash, or a removed directory (trash "")
	renamed                       // from → path; a replaced file kept at trash
	exchange                      // RENAME_EXCHANGE of from and path
)

// entryUndo is one directory change not yet durable.
type entryUndo struct {
	kind  entryKind
	path  string // relative to the backing root
	from  string // renamed, exchange: the old name
	trash string // removed, renamed: the file kept (absolute); "" for none
	isDir bool   // removed: a directory (made again with mode)
	mode  uint32
	dir   uint64 // the backing inode of the directory whose fsync makes it durable
	self  uint64 // removed, renamed over: the removed directory's inode
}

// Dir lays out a state directory for Mount: the backing directory and
// the trash, side by side on one filesystem (so that hard links work).
// It is made if missing.
func Dir(dir string) (root, trash string, err error) {
	root, trash = filepath.Join(dir, "root"), filepath.Join(dir, "trash")
	for _, d := range []string{root, trash} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", fmt.Errorf("powercut: %w", err)
		}
	}
	return root, trash, nil
}

// Mount serves the backing directory under dir (see Dir) at mnt,
// with mount(2) directly (it needs root and /dev/fuse, no fusermount).
func Mount(dir, mnt string) (*FS, error) {
	root, trash, err := Dir(dir)
	if err != nil {
		return nil, err
	}
	// The trash of an earlier mount is what a cut kept: its unlinks
	// were undone, so what is left there belonged to durable unlinks.
	if err := os.RemoveAll(trash); err != nil {
		return nil, fmt.Errorf("powercut: empty the trash: %w", err)
	}
	if err := os.Mkdir(trash, 0o755); err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	s := &state{root: root, trash: trash, files: map[uint64]*fileUndo{}}
	var rst syscall.Stat_t
	if err := syscall.Stat(root, &rst); err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	lr := &fs.LoopbackRoot{Path: root, Dev: uint64(rst.Dev)}
	rootNode := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, s: s}
	lr.RootNode = rootNode
	sec := time.Second
	server, err := fs.Mount(mnt, rootNode, &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec,
		MountOptions: fuse.MountOptions{
			DirectMount: true, DirectMountStrict: true, AllowOther: true,
			FsName: "powercut", Name: "powercut", MaxBackground: 64,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("powercut: mount %s: %w", mnt, err)
	}
	return &FS{dir: dir, mnt: mnt, root: root, trash: trash, server: server, st: s}, nil
}

// Remount mounts the same backing directory at the same place again,
// after Cut or Unmount: the power is back.
func (f *FS) Remount() error {
	if f.server != nil {
		return fmt.Errorf("powercut: %s is mounted", f.mnt)
	}
	g, err := Mount(f.dir, f.mnt)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mnt }

// Stats says how many fsyncs the mount has seen, how many changes it
// recorded as pending since it was mounted, and how many of them the
// last Cut undid (files whose data changed count once each).
func (f *FS) Stats() (syncs, pending, lost int) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	return f.st.syncs, f.st.pending, f.st.lost
}

// Cut cuts the power: every further change fails (EIO), the filesystem
// is unmounted, and every change not yet durable is undone in the
// backing directory. The processes that use the mount should be killed
// first (a process still inside it makes the unmount lazy). The error
// lists the undos that could not be done.
func (f *FS) Cut() error {
	if f.server == nil {
		return fmt.Errorf("powercut: %s is not mounted", f.mnt)
	}
	f.st.mu.Lock()
	f.st.cut = true
	f.st.mu.Unlock()
	if err := f.server.Unmount(); err != nil {
		// Something still has a file open under the mount: detach it
		// from the mountpoint. The server goes on answering what is
		// open (every change fails, as the power is cut) and stops
		// when the last file is closed.
		if derr := syscall.Unmount(f.mnt, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("powercut: unmount %s: %v; detach: %w", f.mnt, err, derr)
		}
	}
	f.server = nil
	return f.st.rollback()
}

// Unmount unmounts without losing anything: every pending change is
// kept (as a clean shutdown that syncs everything would).
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	f.st.mu.Lock()
	f.st.cut = true
	for _, u := range f.st.files {
		u.f.Close()
	}
	f.st.files = map[uint64]*fileUndo{}
	f.st.log = nil
	f.st.mu.Unlock()
	if err := f.server.Unmount(); err != nil {
		if derr := syscall.Unmount(f.mnt, syscall.MNT_DETACH); derr != nil {
			return fmt.Errorf("powercut: unmount %s: %v; detach: %w", f.mnt, err, derr)
		}
	}
	f.server = nil
	return nil
}

// rollback undoes the pending changes: file data first (by inode,
// whatever its names), then the directory changes newest first.
func (s *state) rollback() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = len(s.files) + len(s.log)
	var errs []error
	for _, u := range s.files {
		if err := u.f.Truncate(u.size); err != nil {
			errs = append(errs, err)
		}
		for b, data := range u.blocks {
			if _, err := u.f.WriteAt(data, b*blockSize); err != nil {
				errs = append(errs, err)
			}
		}
		u.f.Close()
	}
	s.files = map[uint64]*fileUndo{}
	for i := len(s.log) - 1; i >= 0; i-- {
		if err := s.undo(s.log[i]); err != nil {
			errs = append(errs, err)
		}
	}
	s.log = nil
	return errors.Join(errs...)
}

func (s *state) abs(rel string) string { return filepath.Join(s.root, rel) }

func (s *state) undo(e *entryUndo) error {
	switch e.kind {
	case created:
		if err := os.RemoveAll(s.abs(e.path)); err != nil {
			return fmt.Errorf("undo the creation of %s: %w", e.path, err)
		}
	case removed:
		if e.isDir {
			// It may be there already: made again, durably, in a
			// directory whose own removal and making again were
			// durable too.
			if err := os.Mkdir(s.abs(e.path), os.FileMode(e.mode&0o7777)); err != nil && !errors.Is(err, iofs.ErrExist) {
				return fmt.Errorf("undo the removal of directory %s: %w", e.path, err)
			}
			return nil
		}
		if err := os.Rename(e.trash, s.abs(e.path)); err != nil {
			return fmt.Errorf("undo the unlink of %s: %w", e.path, err)
		}
	case renamed:
		if err := os.Rename(s.abs(e.path), s.abs(e.from)); err != nil {
			return fmt.Errorf("undo the rename of %s to %s: %w", e.from, e.path, err)
		}
		if e.isDir {
			if err := os.Mkdir(s.abs(e.path), os.FileMode(e.mode&0o7777)); err != nil {
				return fmt.Errorf("undo the replacement of directory %s: %w", e.path, err)
			}
		} else if e.trash != "" {
			if err := os.Rename(e.trash, s.abs(e.path)); err != nil {
				return fmt.Errorf("undo the replacement of %s: %w", e.path, err)
			}
		}
	case exchange:
		if err := renameat2(s.abs(e.from), s.abs(e.path), renameExchange); err != nil {
			return fmt.Errorf("undo the exchange of %s and %s: %w", e.from, e.path, err)
		}
	}
	return nil
}

// commitDir makes the pending changes of the directory with backing
// inode dir durable.
func (s *state) commitDir(dir uint64) {
	s.syncs++
	orig := s.log
	done := make([]bool, len(orig))
	for i, e := range orig {
		done[i] = e.dir == dir
	}
	for i, e := range orig {
		if !done[i] {
			continue
		}
		if e.trash != "" {
			os.Remove(e.trash) // the unlink is durable: the file is gone
		}
		if e.kind == renamed {
			// The older pending changes under the old name are undone
			// under the new one now (renames of directories).
			for j := range i {
				if !done[j] {
					orig[j].path = movePath(orig[j].path, e.from, e.path)
					orig[j].from = movePath(orig[j].from, e.from, e.path)
				}
			}
		}
	}
	// A directory whose removal is durable is gone with whatever
	// pending changes were made in it.
	gone := map[uint64]bool{}
	for i, e := range orig {
		if done[i] && e.self != 0 {
			gone[e.self] = true
		}
	}
	var kept []*entryUndo
	for i, e := range orig {
		if !done[i] && !gone[e.dir] {
			kept = append(kept, e)
		}
	}
	s.log = kept
}

// movePath renames the prefix from of p to to.
func movePath(p, from, to string) string {
	if p == from {
		return to
	}
	if rest, ok := cutDir(p, from); ok {
		return filepath.Join(to, rest)
	}
	return p
}

func cutDir(p, dir string) (string, bool) {
	if len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' {
		return p[len(dir)+1:], true
	}
	return "", false
}

// record appends a directory change; the caller holds mu.
func (s *state) record(e *entryUndo) {
	s.log = append(s.log, e)
	s.pending++
}

// keep hard-links the file at abs into the trash, so that an undo can
// bring it back; the caller holds mu.
func (s *state) keep(abs string) (string, error) {
	s.trashN++
	t := filepath.Join(s.trash, strconv.Itoa(s.trashN))
	if err := os.Link(abs, t); err != nil {
		return "", err
	}
	return t, nil
}

// inode is the backing inode number of abs (0 if it cannot be read).
func inode(abs string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(abs, &st); err != nil {
		return 0
	}
	return st.Ino
}

// touch saves the synced bytes of [off, off+n) of the file at abs
// before they change, and its synced size; the caller holds mu.
func (s *state) touch(abs string, off, n int64) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return fs.ToErrno(err)
	}
	u := s.files[st.Ino]
	if u == nil {
		f, err := os.OpenFile(abs, os.O_RDWR, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		u = &fileUndo{f: f, size: st.Size, blocks: map[int64][]byte{}}
		s.files[st.Ino] = u
		s.pending++
	}
	if n <= 0 {
		return 0
	}
	for b := off / blockSize; b*blockSize < off+n && b*blockSize < u.size; b++ {
		if _, ok := u.blocks[b]; ok {
			continue
		}
		buf := make([]byte, min(blockSize, u.size-b*blockSize))
		m, err := u.f.ReadAt(buf, b*blockSize)
		if err != nil && m < len(buf) {
			// Shorter than its synced size: it was truncated
			// through this mount, so the block is saved already, or
			// from outside it; keep what there is.
			buf = buf[:m]
		}
		u.blocks[b] = buf
	}
	return 0
}

// syncFile makes the data of the file at abs durable.
func (s *state) syncFile(abs string) {
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return
	}
	s.syncs++
	if u := s.files[st.Ino]; u != nil {
		u.f.Close()
		delete(s.files, st.Ino)
	}
}

// node is a loopback node whose changes are recorded.
type node struct {
	*fs.LoopbackNode
	s *state
}

// WrapChild makes every node of the tree a recording one.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: ln, s: n.s}
	}
	return ops
}

// handle is an open file; sync says it was opened O_SYNC or O_DSYNC.
type handle struct {
	*fs.LoopbackFile
	sync bool
}

// PassthroughFd refuses FUSE passthrough, in which the kernel would
// read and write the backing file itself and this filesystem would not
// see the writes.
func (h *handle) PassthroughFd() (int, bool) { return -1, false }

func (n *node) rel() string {
	return n.Path(n.RootData.RootNode.EmbeddedInode())
}

func (n *node) abs() string { return filepath.Join(n.RootData.Path, n.rel()) }

// begin takes the lock; false when the power is cut.
func (n *node) begin() bool {
	n.s.mu.Lock()
	if n.s.cut {
		n.s.mu.Unlock()
		return false
	}
	return true
}

func (n *node) end() { n.s.mu.Unlock() }

func (n *node) created(name string) {
	n.s.record(&entryUndo{kind: created, path: filepath.Join(n.rel(), name), dir: inode(n.abs())})
}

var (
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeWriter         = (*node)(nil)
	_ fs.NodeWritever       = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if !n.begin() {
		return nil, nil, 0, syscall.EIO
	}
	defer n.end()
	existed := inode(filepath.Join(n.abs(), name)) != 0
	if existed && flags&syscall.O_TRUNC != 0 {
		if errno := n.s.touch(filepath.Join(n.abs(), name), 0, 0); errno != 0 {
			return nil, nil, 0, errno
		}
		n.truncating(filepath.Join(n.abs(), name), 0)
	}
	ch, fh, ff, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if !existed {
		n.created(name)
	}
	return ch, wrap(fh, flags), ff, 0
}

func wrap(fh fs.FileHandle, flags uint32) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	return &handle{LoopbackFile: lf, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !n.begin() {
		return nil, syscall.EIO
	}
	defer n.end()
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !n.begin() {
		return nil, syscall.EIO
	}
	defer n.end()
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !n.begin() {
		return nil, syscall.EIO
	}
	defer n.end()
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if !n.begin() {
		return nil, syscall.EIO
	}
	defer n.end()
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.created(name)
	}
	return ch, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	p := filepath.Join(n.abs(), name)
	t, err := n.s.keep(p)
	if err != nil {
		return fs.ToErrno(err)
	}
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		os.Remove(t)
		return errno
	}
	n.s.record(&entryUndo{kind: removed, path: filepath.Join(n.rel(), name), trash: t, dir: inode(n.abs())})
	return 0
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.abs(), name), &st); err != nil {
		return fs.ToErrno(err)
	}
	if errno := n.LoopbackNode.Rmdir(ctx, name); errno != 0 {
		return errno
	}
	n.s.record(&entryUndo{kind: removed, path: filepath.Join(n.rel(), name), isDir: true, mode: st.Mode, dir: inode(n.abs()), self: st.Ino})
	return 0
}

const (
	renameNoReplace = 1 // RENAME_NOREPLACE
	renameExchange  = 2 // RENAME_EXCHANGE
)

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := filepath.Join(n.rel(), name), filepath.Join(np.rel(), newName)
	e := &entryUndo{kind: renamed, path: to, from: from, dir: inode(np.abs())}
	if flags&renameExchange != 0 {
		e.kind = exchange
	} else {
		var st syscall.Stat_t
		if err := syscall.Lstat(n.s.abs(to), &st); err == nil {
			if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				e.isDir, e.mode, e.self = true, st.Mode, st.Ino
			} else {
				t, err := n.s.keep(n.s.abs(to))
				if err != nil {
					return fs.ToErrno(err)
				}
				e.trash = t
			}
		}
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		if e.trash != "" {
			os.Remove(e.trash)
		}
		return errno
	}
	n.s.record(e)
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if !n.begin() {
			return nil, 0, syscall.EIO
		}
		defer n.end()
		if errno := n.s.touch(n.abs(), 0, 0); errno != 0 {
			return nil, 0, errno
		}
		n.truncating(n.abs(), 0)
	}
	fh, ff, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return wrap(fh, flags), ff, 0
}

// truncating saves the synced blocks that a truncation to size drops;
// the caller holds mu and has touched the file.
func (n *node) truncating(abs string, size int64) {
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil || st.Size <= size {
		return
	}
	n.s.touch(abs, size, st.Size-size)
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return n.Writev(ctx, f, [][]byte{data}, off)
}

func (n *node) Writev(ctx context.Context, f fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	if !n.begin() {
		return 0, syscall.EIO
	}
	defer n.end()
	h, ok := f.(*handle)
	if !ok {
		return 0, syscall.EBADF
	}
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	if !h.sync {
		if errno := n.s.touch(n.abs(), off, size); errno != 0 {
			return 0, errno
		}
	}
	var written uint32
	for _, d := range data {
		w, errno := h.LoopbackFile.Write(ctx, d, off)
		written += w
		off += int64(w)
		if errno != 0 {
			return written, errno
		}
		if int(w) < len(d) {
			break
		}
	}
	if h.sync {
		h.LoopbackFile.Fsync(ctx, 0)
	}
	return written, 0
}

// Fsync of a file makes its data durable; of a directory (handles
// from OpendirHandle reach dirHandle.Fsyncdir instead), its entries.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	if h, ok := f.(*handle); ok {
		if errno := h.LoopbackFile.Fsync(ctx, flags); errno != 0 {
			return errno
		}
	}
	if n.IsDir() {
		n.s.commitDir(inode(n.abs()))
		return 0
	}
	n.s.syncFile(n.abs())
	return 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	sz, ok := in.GetSize()
	if !ok {
		if h, ok := f.(*handle); ok {
			f = h.LoopbackFile
		}
		return n.LoopbackNode.Setattr(ctx, f, in, out)
	}
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	if errno := n.s.touch(n.abs(), 0, 0); errno != 0 {
		return errno
	}
	n.truncating(n.abs(), int64(sz))
	if h, ok := f.(*handle); ok {
		f = h.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if !n.begin() {
		return syscall.EIO
	}
	defer n.end()
	h, ok := f.(*handle)
	if !ok {
		return syscall.EBADF
	}
	if errno := n.s.touch(n.abs(), int64(off), int64(size)); errno != 0 {
		return errno
	}
	return h.LoopbackFile.Allocate(ctx, off, size, mode)
}

// CopyFileRange is refused, so that the kernel or the program copies
// with reads and writes, which are recorded.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{DirStream: fh.(fs.DirStream), n: n}, ff, 0
}

// dirHandle is an open directory whose fsync makes its entries durable.
type dirHandle struct {
	fs.DirStream
	n *node
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if fd, ok := d.DirStream.(fs.FileFsyncdirer); ok {
		if errno := fd.Fsyncdir(ctx, flags); errno != 0 {
			return errno
		}
	}
	if !d.n.begin() {
		return syscall.EIO
	}
	defer d.n.end()
	d.n.s.commitDir(inode(d.n.abs()))
	return 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if r, ok := d.DirStream.(fs.FileReaddirenter); ok {
		return r.Readdirent(ctx)
	}
	if !d.HasNext() {
		return nil, 0
	}
	e, errno := d.Next()
	return &e, errno
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if s, ok := d.DirStream.(fs.FileSeekdirer); ok {
		return s.Seekdir(ctx, off)
	}
	return syscall.ENOTSUP
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	if r, ok := d.DirStream.(fs.FileReleasedirer); ok {
		r.Releasedir(ctx, flags)
		return
	}
	d.Close()
}

func renameat2(from, to string, flags uint) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, flags)
}
