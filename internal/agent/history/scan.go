package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// tempPrefix starts the names of what a restore writes next to a file
// before renaming it into place; a checkpoint skips them and a restore
// removes those a crash left.
const tempPrefix = ".hutch-history-"

func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return tempPrefix + hex.EncodeToString(b[:])
}

// fileID names an inode.
type fileID struct{ dev, ino uint64 }

// scan is one walk of a tree: every directory opened beneath its parent's
// descriptor with O_NOFOLLOW, so the walk never leaves the tree, whatever
// the tree's symlinks say.
type scan struct {
	s     *Store
	ctx   context.Context
	name  string // the tree as the caller named it, for messages
	store bool   // copy files into blobs (a checkpoint), or only hash them (a diff)
	excl  map[string]bool
	skip  map[fileID]bool
	dev   uint64
	cache []map[string]*Entry
	// cut: a file changed at or after it (ns) is racy, its hash not to be
	// reused later (see file).
	cut int64

	entries  []Entry
	skipped  []Skipped
	files    int
	bytes    int64
	newBlobs []string
	uniq     map[string]int64 // blobs the checkpoint names, for the budget
	uniqSum  int64
}

// scanTree walks the tree open as tree, reusing the hashes of the
// manifests in cache where a file's size, mtime, inode and ctime show it
// unchanged. With store, it copies what it hashes into blobs; on error,
// the blobs it added are removed.
func (s *Store) scanTree(ctx context.Context, tree *os.File, store bool, cache ...*manifest) (_ *scan, retErr error) {
	sc := &scan{
		s:     s,
		ctx:   ctx,
		name:  tree.Name(),
		store: store,
		excl:  map[string]bool{},
		skip:  s.skipIDs(),
		cut:   s.now().Add(-s.racy).UnixNano(),
		uniq:  map[string]int64{},
	}
	for _, e := range s.opts.Excludes {
		sc.excl[e] = true
	}
	for _, m := range cache {
		if m != nil {
			sc.cache = append(sc.cache, m.index())
		}
	}
	defer func() {
		if retErr != nil {
			s.dropNew(sc.newBlobs)
		}
	}()
	fd, err := unix.Openat(int(tree.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, sc.fsError(err, ".")
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, sc.fsError(err, ".")
	}
	sc.dev = st.Dev
	sc.entries = append(sc.entries, dirEntry(".", &st))
	if err := sc.dir(fd, "."); err != nil {
		return nil, err
	}
	slices.SortFunc(sc.entries[1:], func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return sc, nil
}

// dropNew removes the blobs of sums no checkpoint names.
func (s *Store) dropNew(sums []string) {
	for _, sum := range sums {
		if s.refs[sum] == 0 {
			s.removeBlob(sum)
		}
	}
}

// skipIDs are the inodes of the directories no tree includes: the store's
// and the SkipDirs.
func (s *Store) skipIDs() map[fileID]bool {
	ids := map[fileID]bool{}
	for _, d := range append([]string{s.dir}, s.opts.SkipDirs...) {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil {
			ids[fileID{st.Dev, st.Ino}] = true
		}
	}
	return ids
}

func (sc *scan) dir(fd int, rel string) error {
	if err := checkCtx(sc.ctx); err != nil {
		return err
	}
	names, err := dirent.Names(fd)
	if err != nil {
		return sc.fsError(err, rel)
	}
	slices.Sort(names)
	for _, name := range names {
		if isTemp(name) {
			continue
		}
		crel := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed while the walk ran
			}
			return sc.fsError(err, crel)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if sc.excl[name] || sc.skip[fileID{st.Dev, st.Ino}] {
				continue
			}
			if st.Dev != sc.dev {
				sc.skipEntry(crel, "mount point")
				continue
			}
			if err := sc.add(dirEntry(crel, &st)); err != nil {
				return err
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return sc.fsError(err, crel)
			}
			err = sc.dir(cfd, crel)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			e, ok, err := sc.file(fd, name, crel, &st)
			if err != nil {
				return err
			}
			if ok {
				if err := sc.add(e); err != nil {
					return err
				}
			}
		case unix.S_IFLNK:
			target, err := readlinkAt(fd, name)
			if err != nil {
				return sc.fsError(err, crel)
			}
			e := statEntry(crel, TypeSymlink, &st)
			e.Target = target
			if err := sc.add(e); err != nil {
				return err
			}
		default:
			sc.skipEntry(crel, otherType(st.Mode))
		}
	}
	return nil
}

func (sc *scan) add(e Entry) error {
	if len(sc.entries) >= sc.s.opts.MaxEntries {
		return errdefs.New(errdefs.ErrTooLarge, "history_too_large",
			"%s holds more than %d entries, the limit of one checkpoint; exclude what need not be kept", sc.name, sc.s.opts.MaxEntries)
	}
	sc.entries = append(sc.entries, e)
	if e.Type == TypeFile {
		sc.files++
		sc.bytes += e.Size
	}
	return nil
}

func (sc *scan) skipEntry(rel, reason string) {
	if len(sc.skipped) < maxSkipped {
		sc.skipped = append(sc.skipped, Skipped{Path: rel, Reason: reason})
	}
}

// file describes the regular file name in dirfd, with its hash: from a
// manifest of the cache when nothing shows it changed since, else by
// reading it (into a blob when the scan stores). A file whose change is
// more recent than the scan's cut is racy: a write in the same clock tick
// as the read could leave size, mtime and ctime as they were, so its
// entry gets no ctime and the next scan reads it again (git's "racily
// clean" entries). ok is false when the file went away or changed type.
func (sc *scan) file(dirfd int, name, rel string, st *unix.Stat_t) (_ Entry, ok bool, _ error) {
	if st.Size > sc.s.opts.MaxFileBytes {
		return Entry{}, false, sc.tooLarge(rel)
	}
	if sum, hit := sc.cached(rel, st); hit {
		e := fileEntry(rel, st)
		e.SHA256 = sum
		return e, true, sc.count(sum, st.Size)
	}
	fd, err := openFile(dirfd, name)
	switch {
	case err == unix.ENOENT || err == unix.ELOOP:
		return Entry{}, false, nil // gone, or now a symlink: changed under the walk
	case err != nil:
		return Entry{}, false, sc.fsError(err, rel)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return Entry{}, false, sc.fsError(err, rel)
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG {
		sc.skipEntry(rel, "changed while it was read")
		return Entry{}, false, nil
	}
	var sum string
	var n int64
	if sc.store {
		var created bool
		sum, n, created, err = sc.s.putBlob(f, sc.s.opts.MaxFileBytes)
		if created {
			sc.newBlobs = append(sc.newBlobs, sum)
		}
	} else {
		sum, n, err = sc.s.hashReader(f, sc.s.opts.MaxFileBytes)
	}
	switch {
	case errors.Is(err, errFileTooLarge):
		return Entry{}, false, sc.tooLarge(rel)
	case err != nil:
		return Entry{}, false, sc.fsError(err, rel)
	}
	e := fileEntry(rel, &fst)
	e.Size, e.SHA256 = n, sum
	if n != fst.Size || e.Mtime >= sc.cut || e.Ctime >= sc.cut {
		e.Ctime = 0
	}
	return e, true, sc.count(sum, n)
}

// cached finds rel's hash in the cache when the file shows no change.
func (sc *scan) cached(rel string, st *unix.Stat_t) (string, bool) {
	for _, idx := range sc.cache {
		c := idx[rel]
		if c == nil || c.Type != TypeFile || c.Ctime == 0 || c.Size != st.Size || c.Ino != st.Ino ||
			c.Mtime != st.Mtim.Nano() || c.Ctime != st.Ctim.Nano() {
			continue
		}
		if sc.store {
			if _, ok := sc.s.blobs[c.SHA256]; !ok {
				continue
			}
		}
		return c.SHA256, true
	}
	return "", false
}

// count adds blob sum to what the checkpoint names and checks the budget.
func (sc *scan) count(sum string, size int64) error {
	if !sc.store {
		return nil
	}
	if _, ok := sc.uniq[sum]; ok {
		return nil
	}
	sc.uniq[sum] = size
	sc.uniqSum += size
	if sc.uniqSum > sc.s.opts.MaxBytes {
		return errdefs.New(errdefs.ErrTooLarge, "history_too_large",
			"the files of %s hold more than %d bytes, the file history's budget; exclude what need not be kept", sc.name, sc.s.opts.MaxBytes)
	}
	return nil
}

func (sc *scan) tooLarge(rel string) error {
	return errdefs.New(errdefs.ErrTooLarge, "file_too_large",
		"%s is larger than %d bytes, the limit of one file in a checkpoint; exclude its directory or remove it",
		path.Join(sc.name, rel), sc.s.opts.MaxFileBytes)
}

func (sc *scan) fsError(err error, rel string) error {
	return fsError(err, path.Join(sc.name, rel))
}

// fsError classifies a system call's error about the tree's path p.
func fsError(err error, p string) error {
	var classified *errdefs.Error
	switch {
	case errors.As(err, &classified):
		return err
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return errdefs.Wrap(errdefs.ErrForbidden, "permission_denied", err, "%s: permission denied", p)
	case errors.Is(err, unix.ENOENT):
		return errdefs.Wrap(errdefs.ErrNotFound, "file_not_found", err, "%s: no such file or directory", p)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return errdefs.Wrap(errdefs.ErrTooLarge, "no_space", err, "%s: no space left in the sandbox", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// openFile opens a regular file of the tree for reading without following
// a symlink, blocking on a FIFO swapped in, or changing its atime where
// the caller may say so.
func openFile(dirfd int, name string) (int, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOATIME, 0)
	if err == unix.EPERM {
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	return fd, err
}

func statEntry(rel, typ string, st *unix.Stat_t) Entry {
	return Entry{
		Path:  rel,
		Type:  typ,
		Mode:  st.Mode & 0o7777,
		UID:   st.Uid,
		GID:   st.Gid,
		Mtime: st.Mtim.Nano(),
	}
}

// fileEntry is statEntry with what shows a file unchanged.
func fileEntry(rel string, st *unix.Stat_t) Entry {
	e := statEntry(rel, TypeFile, st)
	e.Size, e.Ino, e.Ctime = st.Size, st.Ino, st.Ctim.Nano()
	return e
}

func dirEntry(rel string, st *unix.Stat_t) Entry { return statEntry(rel, TypeDir, st) }

func otherType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "unknown type"
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// nsTime is a timestamp for utimensat.
func nsTime(ns int64) unix.Timespec { return unix.NsecToTimespec(ns) }
