package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// RestoreResult is what a restore did.
type RestoreResult struct {
	// Restored is the checkpoint the tree now matches; PreUndo the
	// checkpoint of the tree as it was just before, so the restore can be
	// undone in turn.
	Restored Checkpoint
	PreUndo  Checkpoint
	// Changes is how the tree changed: from PreUndo to Restored.
	Changes []Change
}

// Restore makes the tree open as tree exactly checkpoint id or, with id
// empty, the steps-th back from the newest (1 is the newest), after
// taking a checkpoint of it as it is (KindPreUndo): files are written
// whole and renamed into place with their mode, owner and mtime, what the
// checkpoint does not hold is removed, except excluded directories, mount
// points and FIFOs, sockets and devices (which no checkpoint holds), and
// every path is resolved one name at a time beneath its parent's
// descriptor without following a symlink, so nothing outside the tree is
// written whatever the tree holds. Owners are set where this process may
// set them (as root in the sandbox); elsewhere files keep its own.
//
// ctx bounds the walk before anything is written; once the writes begin
// they run to the end. A restore cut short (a crash) leaves each path
// either as it was or as the checkpoint has it, and restoring again
// finishes the job.
func (s *Store) Restore(ctx context.Context, tree *os.File, id string, steps int) (RestoreResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	target, err := s.selectLocked(id, steps)
	if err != nil {
		return RestoreResult{}, err
	}
	tm, err := s.manifestOf(target.ID)
	if err != nil {
		return RestoreResult{}, err
	}
	pre, err := s.checkpoint(ctx, tree, KindPreUndo, "before restoring checkpoint "+target.ID)
	if err != nil {
		return RestoreResult{}, err
	}
	res := RestoreResult{Restored: target, PreUndo: pre, Changes: diffEntries(s.last.entries, tm.entries)}
	r := &restorer{
		s:    s,
		name: tree.Name(),
		kids: map[string][]*Entry{},
		cur:  s.last.index(),
		excl: map[string]bool{},
		skip: s.skipIDs(),
		root: unix.Geteuid() == 0,
	}
	for _, e := range slices.Concat(s.opts.Excludes, tm.Excludes) {
		r.excl[e] = true
	}
	for i := range tm.entries[1:] {
		e := &tm.entries[i+1]
		dir := path.Dir(e.Path)
		r.kids[dir] = append(r.kids[dir], e)
	}
	if err := r.run(tree, &tm.entries[0]); err != nil {
		return res, err
	}
	return res, s.retain()
}

// restorer applies one manifest to a tree.
type restorer struct {
	s    *Store
	name string
	kids map[string][]*Entry // each directory's entries, by its path
	cur  map[string]*Entry   // the tree just before, with its hashes
	excl map[string]bool
	skip map[fileID]bool
	dev  uint64
	root bool // may set any owner and ignore permissions
}

func (r *restorer) run(tree *os.File, top *Entry) error {
	fd, err := unix.Openat(int(tree.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return r.fsError(err, ".")
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return r.fsError(err, ".")
	}
	r.dev = st.Dev
	if err := r.writable(fd, &st); err != nil {
		return err
	}
	if err := r.dir(fd, "."); err != nil {
		return err
	}
	if err := r.setAttrs(fd, top); err != nil {
		return err
	}
	return r.setTimes(fd, ".", top)
}

// dir makes the directory open as fd (rel in the tree) hold exactly its
// entries of the checkpoint, recursively.
func (r *restorer) dir(fd int, rel string) error {
	names, err := dirent.Names(fd)
	if err != nil {
		return r.fsError(err, rel)
	}
	want := map[string]bool{}
	for _, e := range r.kids[rel] {
		want[path.Base(e.Path)] = true
	}
	for _, name := range names {
		if want[name] {
			continue
		}
		crel := joinRel(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return r.fsError(err, crel)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if r.keepDir(name, &st) {
				continue
			}
			if err := r.removeDir(fd, name, crel, true); err != nil {
				return err
			}
		case unix.S_IFREG, unix.S_IFLNK:
			if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
				return r.fsError(err, crel)
			}
		}
		// FIFOs, sockets and devices no checkpoint holds stay.
	}
	for _, e := range r.kids[rel] {
		if err := r.entry(fd, path.Base(e.Path), e); err != nil {
			return err
		}
	}
	return nil
}

// keepDir reports whether a directory no checkpoint entry names stays:
// excluded, the store's, or another file system's.
func (r *restorer) keepDir(name string, st *unix.Stat_t) bool {
	return r.excl[name] || r.skip[fileID{st.Dev, st.Ino}] || st.Dev != r.dev
}

// entry makes name in the directory fd what e says.
func (r *restorer) entry(fd int, name string, e *Entry) error {
	var st unix.Stat_t
	exists := true
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
		exists = false
	} else if err != nil {
		return r.fsError(err, e.Path)
	}
	isDir := exists && st.Mode&unix.S_IFMT == unix.S_IFDIR
	switch e.Type {
	case TypeDir:
		if isDir && (r.skip[fileID{st.Dev, st.Ino}] || st.Dev != r.dev) {
			return nil // a mount point now, or the store: not the tree's to change
		}
		if exists && !isDir {
			if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
				return r.fsError(err, e.Path)
			}
		}
		if !isDir {
			if err := unix.Mkdirat(fd, name, 0o700); err != nil {
				return r.fsError(err, e.Path)
			}
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return r.fsError(err, e.Path)
		}
		defer unix.Close(cfd)
		if err := unix.Fstat(cfd, &st); err != nil {
			return r.fsError(err, e.Path)
		}
		if err := r.writable(cfd, &st); err != nil {
			return err
		}
		if err := r.dir(cfd, e.Path); err != nil {
			return err
		}
		if err := r.setAttrs(cfd, e); err != nil {
			return err
		}
		return r.setTimes(fd, name, e)
	case TypeFile:
		if exists && st.Mode&unix.S_IFMT == unix.S_IFREG && r.sameContent(fd, name, e, &st) {
			if done, err := r.fixFile(fd, name, e, &st); done || err != nil {
				return err
			}
		}
		if isDir {
			if err := r.removeDir(fd, name, e.Path, false); err != nil {
				return err
			}
		}
		return r.writeFile(fd, name, e)
	case TypeSymlink:
		if exists && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if target, err := readlinkAt(fd, name); err == nil && target == e.Target {
				if err := r.chownAt(fd, name, e, &st); err != nil {
					return err
				}
				return r.setTimes(fd, name, e)
			}
		}
		if isDir {
			if err := r.removeDir(fd, name, e.Path, false); err != nil {
				return err
			}
		}
		tmp := tempName()
		if err := unix.Symlinkat(e.Target, fd, tmp); err != nil {
			return r.fsError(err, e.Path)
		}
		var tst unix.Stat_t
		err := unix.Fstatat(fd, tmp, &tst, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = r.chownAt(fd, tmp, e, &tst)
		}
		if err == nil {
			err = r.setTimes(fd, tmp, e)
		}
		if err == nil {
			err = unix.Renameat(fd, tmp, fd, name)
		}
		if err != nil {
			unix.Unlinkat(fd, tmp, 0)
			return r.fsError(err, e.Path)
		}
		return nil
	}
	return fmt.Errorf("history: %s: unknown type %q", e.Path, e.Type)
}

// sameContent reports whether the regular file name (st) holds e's
// content: known from the scan just before when nothing shows a change
// since, else read again.
func (r *restorer) sameContent(dirfd int, name string, e *Entry, st *unix.Stat_t) bool {
	if st.Size != e.Size {
		return false
	}
	if c := r.cur[e.Path]; c != nil && c.Type == TypeFile && c.Ctime != 0 && c.Size == st.Size &&
		c.Ino == st.Ino && c.Mtime == st.Mtim.Nano() && c.Ctime == st.Ctim.Nano() {
		return c.SHA256 == e.SHA256
	}
	fd, err := openFile(dirfd, name)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	sum, _, err := r.s.hashReader(f, r.s.opts.MaxFileBytes)
	return err == nil && sum == e.SHA256
}

// fixFile gives the file name (st), whose content is right, e's owner,
// mode and mtime, through a descriptor opened without following a
// symlink. done is false when it could not be opened (no permission) or
// is a hard link: the caller writes it anew.
func (r *restorer) fixFile(dirfd int, name string, e *Entry, st *unix.Stat_t) (done bool, _ error) {
	if st.Uid == e.UID && st.Gid == e.GID && st.Mode&0o7777 == e.Mode && st.Mtim.Nano() == e.Mtime {
		return true, nil
	}
	if st.Nlink > 1 {
		// A hard link may share its inode with a file outside the tree:
		// its owner and mode are not the restore's to change. A new
		// inode takes its place.
		return false, nil
	}
	fd, err := openFile(dirfd, name)
	if err != nil {
		return false, nil
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil || fst.Ino != st.Ino || fst.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil // replaced under us
	}
	if err := r.setAttrs(fd, e); err != nil {
		return true, err
	}
	return true, r.setTimes(dirfd, name, e)
}

// writeFile writes e's blob next to name, with e's owner, mode and mtime,
// and renames it over name. The copy is checked against its hash, so a
// damaged blob never lands.
func (r *restorer) writeFile(dirfd int, name string, e *Entry) (retErr error) {
	blob, err := r.s.openBlob(e.SHA256)
	if err != nil {
		return err
	}
	defer blob.Close()
	tmp := tempName()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return r.fsError(err, e.Path)
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		f.Close()
		if retErr != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(blob, e.Size+1))
	if err != nil {
		return r.fsError(err, e.Path)
	}
	if n != e.Size || hex.EncodeToString(h.Sum(nil)) != e.SHA256 {
		return errdefs.New(errdefs.ErrUnavailable, "history_damaged", "the file history's copy of %s is damaged", path.Join(r.name, e.Path))
	}
	if err := r.setAttrs(fd, e); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return r.fsError(err, e.Path)
	}
	if err := r.setTimes(dirfd, tmp, e); err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return r.fsError(err, e.Path)
	}
	return nil
}

// setAttrs gives the file or directory open as fd e's owner and mode.
func (r *restorer) setAttrs(fd int, e *Entry) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return r.fsError(err, e.Path)
	}
	chowned := false
	if st.Uid != e.UID || st.Gid != e.GID {
		switch err := unix.Fchown(fd, int(e.UID), int(e.GID)); err {
		case nil:
			chowned = true
		case unix.EPERM, unix.EINVAL:
			// Not ours to give (or not mapped in the sandbox).
		default:
			return r.fsError(err, e.Path)
		}
	}
	// A chown clears setuid and setgid: the mode goes after it.
	if chowned || st.Mode&0o7777 != e.Mode {
		if err := unix.Fchmod(fd, e.Mode); err != nil {
			return r.fsError(err, e.Path)
		}
	}
	return nil
}

// chownAt gives the symlink name (st) e's owner.
func (r *restorer) chownAt(dirfd int, name string, e *Entry, st *unix.Stat_t) error {
	if st.Uid == e.UID && st.Gid == e.GID {
		return nil
	}
	switch err := unix.Fchownat(dirfd, name, int(e.UID), int(e.GID), unix.AT_SYMLINK_NOFOLLOW); err {
	case nil, unix.EPERM, unix.EINVAL:
		return nil
	default:
		return r.fsError(err, e.Path)
	}
}

// setTimes sets name's mtime (not following a symlink); the atime stays.
func (r *restorer) setTimes(dirfd int, name string, e *Entry) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.Mtime)}
	if err := unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return r.fsError(err, e.Path)
	}
	return nil
}

// writable lets this process write into the directory open as fd (st)
// when it is not root and the directory's mode says no; setAttrs puts
// the mode right afterwards.
func (r *restorer) writable(fd int, st *unix.Stat_t) error {
	if r.root || st.Mode&0o700 == 0o700 {
		return nil
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777|0o700); err != nil {
		return r.fsError(err, ".")
	}
	return nil
}

// removeDir removes the directory name in dirfd and what it holds,
// descending by descriptor without following a symlink. Mount points and
// the store stay, and, with keepExcluded, excluded directories; the
// directories holding them then stay too.
func (r *restorer) removeDir(dirfd int, name, rel string, keepExcluded bool) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch err {
	case nil:
	case unix.ENOENT:
		return nil
	case unix.ENOTDIR, unix.ELOOP:
		// No longer a directory.
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
			return r.fsError(err, rel)
		}
		return nil
	default:
		return r.fsError(err, rel)
	}
	kept, err := r.empty(fd, rel, keepExcluded)
	unix.Close(fd)
	if err != nil {
		return err
	}
	err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	switch {
	case err == nil || err == unix.ENOENT:
		return nil
	case kept && !keepExcluded:
		return errdefs.Conflict("history_mount_in_the_way", "%s holds a mount point, so the checkpoint's entry there cannot be restored", path.Join(r.name, rel))
	case kept && (err == unix.ENOTEMPTY || err == unix.EEXIST):
		return nil
	}
	return r.fsError(err, rel)
}

// empty removes what the directory open as fd holds; kept says whether
// something stayed.
func (r *restorer) empty(fd int, rel string, keepExcluded bool) (kept bool, _ error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, r.fsError(err, rel)
	}
	if err := r.writable(fd, &st); err != nil {
		return false, err
	}
	names, err := dirent.Names(fd)
	if err != nil {
		return false, r.fsError(err, rel)
	}
	for _, name := range names {
		crel := joinRel(rel, name)
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return kept, r.fsError(err, crel)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(fd, name, 0); err != nil && err != unix.ENOENT {
				return kept, r.fsError(err, crel)
			}
			continue
		}
		if r.skip[fileID{st.Dev, st.Ino}] || st.Dev != r.dev || (keepExcluded && r.excl[name]) {
			kept = true
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return kept, r.fsError(err, crel)
		}
		subKept, err := r.empty(sub, crel, keepExcluded)
		unix.Close(sub)
		if err != nil {
			return kept, err
		}
		if subKept {
			kept = true
			continue
		}
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
			return kept, r.fsError(err, crel)
		}
	}
	return kept, nil
}

func (r *restorer) fsError(err error, rel string) error {
	return fsError(err, path.Join(r.name, rel))
}
