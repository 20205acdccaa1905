package layer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// maxDepth bounds the directories removal and clearing descend: a name
// holds at most 2048 (4096 bytes), and each level holds a descriptor.
const maxDepth = 4096

// removeAt removes name in dirfd and, if it is a directory, everything in
// it. It never follows a symlink: each directory is opened with
// O_NOFOLLOW from its parent's descriptor.
func (a *applier) removeAt(dirfd int, name string) error {
	return removeAt(dirfd, name, !a.privileged, 0)
}

func removeAt(dirfd int, name string, bend bool, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	st, serr := lstatAt(dirfd, name)
	if serr != nil || !isDir(&st) {
		return err
	}
	if depth > maxDepth {
		return errdefs.Invalid(CodeNameTooLong, "a tree to remove is deeper than %d directories", maxDepth)
	}
	if bend && st.Mode&0o700 != 0o700 {
		// Our own directory made read-only: we may not list or empty it
		// until it is ours to write again.
		pfd, err := openat2(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
		if err != nil {
			return err
		}
		err = fchmodFd(pfd, st.Mode&0o7777|0o700)
		unix.Close(pfd)
		if err != nil {
			return err
		}
	}
	fd, err := openat2(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
	if err != nil {
		return err
	}
	names, err := listDir(fd)
	for _, n := range names {
		if err != nil {
			break
		}
		err = removeAt(fd, n, bend, depth+1)
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// listDir lists the directory fd (O_PATH or not), without "." and "..".
func listDir(fd int) ([]string, error) {
	d, err := openat2(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, exact)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	return dirent.Names(d)
}

// RemoveAll removes path and everything below it, never following a
// symlink, and, for an unprivileged caller, making its own read-only
// directories writable first (a layer holds 0555 ones). A store removes
// a layer or a refused unpack with it. A missing path is not an error.
func RemoveAll(path string) error {
	path = filepath.Clean(path)
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("layer: refusing to remove %q", path)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("layer: remove %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := removeAt(fd, name, os.Geteuid() != 0, 0); err != nil {
		return fmt.Errorf("layer: remove %s: %w", path, err)
	}
	return nil
}
