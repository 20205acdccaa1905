package layer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Every path is resolved from the root's descriptor, one of two ways:
//
//   - inRoot, as the sandbox would see the path: symlinks are followed,
//     but "/" and ".." stop at the root, /proc's magic links are refused
//     and no mount point is crossed;
//   - exact, for a path this package found on disk: no symlink at all.
//
// Final names are never resolved: they are handled by *at calls on their
// parent's descriptor with AT_SYMLINK_NOFOLLOW, O_NOFOLLOW or O_EXCL.
const (
	inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV
	exact  = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV
)

// openat2 retries the EAGAIN the kernel answers when a rename elsewhere
// made it unsure a ".." stayed inside, and EINTR.
func openat2(dirfd int, p string, flags uint64, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, p, &how)
		if (err == unix.EAGAIN && i < 16) || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// openDir opens the directory rel (relative to the root, "." for the root)
// as O_PATH, following symlinks inside the root, and returns it with its
// physical path: rel itself when no symlink was on the way. With create,
// missing directories are made, walking down one name at a time from the
// root (linear in the depth: a hostile layer's 2048-deep names cost no
// more than their length); a symlink that leads nowhere in the root is
// refused rather than made real. The caller marks (a.mark) the path it
// ends at, or one below it, so what was made is the layer's.
func (a *applier) openDir(rel string, create bool) (int, string, error) {
	fd, phys, err := a.lookupDir(rel)
	if err == nil || !create || !isNotExist(err) {
		return fd, phys, err
	}
	cur, err := openat2(a.root, ".", unix.O_PATH|unix.O_DIRECTORY, exact)
	if err != nil {
		return -1, "", err
	}
	curPhys := "."
	jumped := false // a symlink was followed: curPhys is no prefix of rel
	for end := 0; end < len(rel); {
		next := strings.IndexByte(rel[end:], '/')
		if next < 0 {
			next = len(rel)
		} else {
			next += end
		}
		prefix, name := rel[:next], rel[end:next]
		end = next + 1
		phys := prefix
		if jumped {
			phys = joinRel(curPhys, name)
		}
		fd, err := openat2(cur, name, unix.O_PATH|unix.O_DIRECTORY, exact)
		switch err {
		case unix.ELOOP:
			// A symlink: follow it from the root, as the sandbox would.
			// What was made so far is marked now; the caller marks the
			// rest with the path it ends at.
			a.mark(curPhys)
			fd, phys, err = a.lookupDir(prefix)
			jumped = true
		case unix.ENOENT:
			fd, err = a.mkdir(cur, curPhys, name, phys, true)
			if err == unix.EEXIST {
				// Not a directory, yet not missing: a symlink to nothing.
				err = unix.ENOENT
			}
		}
		unix.Close(cur)
		if isNotExist(err) {
			return -1, "", errdefs.Wrap(errdefs.ErrInvalid, CodeNotADirectory, err, "%s is a symlink that leads nowhere in the layer's root", prefix)
		}
		if err != nil {
			return -1, "", err
		}
		cur, curPhys = fd, phys
	}
	return cur, curPhys, nil
}

// lookupDir opens rel as a directory without making anything.
func (a *applier) lookupDir(rel string) (int, string, error) {
	fd, err := openat2(a.root, rel, unix.O_PATH|unix.O_DIRECTORY, exact)
	if err == nil {
		return fd, rel, nil
	}
	if err != unix.ELOOP {
		return -1, "", err
	}
	// A symlink on the way: follow it as the sandbox would, inside the
	// root, and learn where it led.
	fd, err = openat2(a.root, rel, unix.O_PATH|unix.O_DIRECTORY, inRoot)
	if err != nil {
		return -1, "", err
	}
	phys, err := a.physical(fd)
	if err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	return fd, phys, nil
}

// parent opens the directory holding rel, creating it when missing, and
// returns it with its physical path and rel's final name.
func (a *applier) parent(rel string) (int, string, string, error) {
	dir, name := splitRel(rel)
	fd, phys, err := a.openDir(dir, true)
	if err != nil {
		return -1, "", "", err
	}
	return fd, phys, name, nil
}

// physical is the path of fd relative to the root, from /proc: only asked
// for when a symlink was followed.
func (a *applier) physical(fd int) (string, error) {
	if a.rootPath == "" {
		p, err := fdPath(a.root)
		if err != nil {
			return "", err
		}
		a.rootPath = p
	}
	p, err := fdPath(fd)
	if err != nil {
		return "", err
	}
	switch {
	case p == a.rootPath:
		return ".", nil
	case a.rootPath == "/":
		return p[1:], nil
	case strings.HasPrefix(p, a.rootPath+"/"):
		return p[len(a.rootPath)+1:], nil
	}
	// openat2 guarantees this never happens; refuse rather than guess.
	return "", fmt.Errorf("layer: a directory resolved outside the root")
}

// fdPath is the path the kernel knows fd by.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", fmt.Errorf("layer: resolve a descriptor through /proc (is /proc mounted?): %w", err)
	}
	return p, nil
}

// tempName is a fresh name to create an entry under before it is renamed
// into place.
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".hutch-layer-" + hex.EncodeToString(b[:])
}

// lstatAt describes name in dirfd without following it.
func lstatAt(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// isWhiteout is overlayfs's whiteout: a character device 0/0.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// create makes a new entry in dirfd with mk: at name when nothing is
// there (mk must fail with EEXIST rather than follow or reuse what is),
// otherwise at a fresh temporary name, which replace then renames over
// name. It returns the name it made.
func create(dirfd int, name string, mk func(string) error) (string, error) {
	err := mk(name)
	if err != unix.EEXIST {
		return name, err
	}
	tmp := tempName()
	return tmp, mk(tmp)
}

// replace renames tmp (a new entry in dirfd) over name, when create made
// it under a temporary name. A directory at name is removed first, with
// everything in it; anything else is replaced by the rename itself, never
// opened or followed.
func (a *applier) replace(dirfd int, tmp, name string) error {
	if tmp == name {
		return nil
	}
	if st, err := lstatAt(dirfd, name); err == nil && isDir(&st) {
		if err := a.removeAt(dirfd, name); err != nil {
			return err
		}
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return err
	}
	// rename does nothing when both names are hard links of one file;
	// then tmp is still there.
	if err := unix.Unlinkat(dirfd, tmp, 0); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// fileID identifies an inode, to find again a directory met earlier.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{st.Dev, st.Ino} }

// fchmodFd changes the mode of fd, an O_PATH descriptor included
// (fchmodat2, Linux 6.6; before it, through /proc).
func fchmodFd(fd int, mode uint32) error {
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
	}
	return err
}
