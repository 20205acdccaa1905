package layer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Reading an image's files on the host: Stat and ReadFile look a path up
// in a stack of layers (each unpacked in Layer mode, a flattened tree, or
// an overlay upper layer copied from a sandbox) as the sandbox's overlay
// shows it, and as the sandbox itself would resolve it. Each name comes
// from the topmost layer that has it, a whiteout or a non-directory
// hiding what lies below, an opaque directory ending the merge; symlinks
// are followed inside the image's root: "/" and ".." stop at the root, so
// a link in the image (etc -> /home/admin) leads to the image's own
// home/admin, never the host's. Every name is looked up on a descriptor
// of its directory in its layer without following it, so no link is ever
// followed by the kernel on the host.

// maxLinks bounds the symlinks one lookup follows, as the kernel's own
// resolution does (MAXSYMLINKS).
const maxLinks = 40

// Stat describes name (a path inside the image) in the image whose
// layers are dirs, bottom first, without following a final symlink. A
// missing name is fs.ErrNotExist.
func Stat(dirs []string, name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := lookup(dirs, name, false, func(dir int, base string, _ *unix.Stat_t) error {
		fd, err := openat2(dir, base, unix.O_PATH|unix.O_NOFOLLOW, exact)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		fi, err = f.Stat()
		return err
	})
	if err != nil {
		return nil, lookupError("stat", name, err)
	}
	return fi, nil
}

// ReadFile reads the regular file name (a path inside the image, a
// final symlink followed inside it too) of the image whose layers are
// dirs, bottom first. Only a regular file is read: a missing name, or
// one that is anything else, is fs.ErrNotExist. A file over limit bytes
// is an errdefs.ErrTooLarge error with code CodeTooLarge.
func ReadFile(dirs []string, name string, limit int64) ([]byte, error) {
	var b []byte
	err := lookup(dirs, name, true, func(dir int, base string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return unix.ENOENT
		}
		if st.Size > limit {
			return errdefs.New(errdefs.ErrTooLarge, CodeTooLarge, "the image's %s is over %d bytes", name, limit)
		}
		// O_NONBLOCK: should a fifo have taken the name since, the open
		// does not wait for a writer (a layer never changes; this is
		// belt and braces).
		fd, err := openat2(dir, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, exact)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return unix.ENOENT
		}
		b, err = io.ReadAll(io.LimitReader(f, limit+1))
		if err == nil && int64(len(b)) > limit {
			err = errdefs.New(errdefs.ErrTooLarge, CodeTooLarge, "the image's %s is over %d bytes", name, limit)
		}
		return err
	})
	if err != nil {
		return nil, lookupError("read", name, err)
	}
	return b, nil
}

// lookupError says which name of the image a lookup failed on.
func lookupError(op, name string, err error) error {
	var e *errdefs.Error
	if errors.As(err, &e) {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// lookup resolves name in the merged layers dirs and calls found with the
// descriptor (O_PATH) of the directory that holds what it names, in the
// layer that gives it, its last name there, and what it is. A final
// symlink is followed when follow. The descriptors are closed once found
// returns.
func lookup(dirs []string, name string, follow bool, found func(dir int, base string, st *unix.Stat_t) error) error {
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return unix.EINVAL
	case len(name) > maxPath:
		// As the kernel refuses it: no lookup costs more than a path's
		// length in names.
		return unix.ENAMETOOLONG
	}
	root := make(level, 0, len(dirs))
	defer func() { root.close() }()
	for i := len(dirs) - 1; i >= 0; i-- {
		fd, err := unix.Open(dirs[i], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open the image's layer: %w", err)
		}
		root = append(root, fd)
	}
	if len(root) == 0 {
		return unix.ENOENT
	}
	// path holds the directories walked so far below the root, each as
	// the layers that make it up.
	var path []level
	defer func() {
		for _, l := range path {
			l.close()
		}
	}()
	cur := func() level {
		if len(path) == 0 {
			return root
		}
		return path[len(path)-1]
	}
	todo, links := components(name), 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(path) > 0 {
				path[len(path)-1].close()
				path = path[:len(path)-1]
			}
			continue
		}
		dir := cur()
		in, st, err := dir.find(c)
		if err != nil {
			return err
		}
		last := len(todo) == 0
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK && (follow || !last):
			if links++; links > maxLinks {
				return unix.ELOOP
			}
			target, err := readlinkAt(in, c)
			if err != nil {
				return err
			}
			if strings.HasPrefix(target, "/") {
				for _, l := range path {
					l.close()
				}
				path = nil
			}
			todo = append(components(target), todo...)
			continue
		case last:
			return found(in, c, &st)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return unix.ENOTDIR
		}
		next, err := dir.descend(in, c)
		if err != nil {
			return err
		}
		path = append(path, next)
	}
	// name ends at a directory: the root, a "..", a link to "/".
	dir := cur()
	var st unix.Stat_t
	if err := unix.Fstat(dir[0], &st); err != nil {
		return err
	}
	return found(dir[0], ".", &st)
}

// level is one directory of the merged view: its descriptor (O_PATH) in
// each layer that makes it up, topmost first.
type level []int

func (l level) close() {
	for _, fd := range l {
		unix.Close(fd)
	}
}

// find returns the layer of l whose entry name shows, and the entry; a
// whiteout there, or no layer with it, is ENOENT.
func (l level) find(name string) (int, unix.Stat_t, error) {
	for _, fd := range l {
		st, err := lstatAt(fd, name)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return -1, st, err
		}
		if isWhiteout(&st) {
			break
		}
		return fd, st, nil
	}
	return -1, unix.Stat_t{}, unix.ENOENT
}

// descend returns the level of the directory name, whose topmost entry is
// in the layer top of l: that layer's directory and those of the layers
// below it that have one there too, down to the first that is opaque or
// that has something else at name.
func (l level) descend(top int, name string) (level, error) {
	var next level
	below := false
	for _, fd := range l {
		if fd == top {
			below = true
		}
		if !below {
			continue
		}
		sub, err := openat2(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
		switch err {
		case nil:
		case unix.ENOENT:
			continue
		case unix.ENOTDIR, unix.ELOOP:
			// A file, a link or a whiteout hides the layers below.
			return next, nil
		default:
			next.close()
			return nil, err
		}
		next = append(next, sub)
		if isOpaque(sub) {
			break
		}
	}
	if len(next) == 0 {
		// Gone since it was found: the layers changed under the lookup.
		return nil, unix.ENOENT
	}
	return next, nil
}

// isOpaque reports whether the directory fd (O_PATH) is marked opaque:
// nothing of the layers below shows in it.
func isOpaque(fd int) bool {
	d, err := openat2(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, exact)
	if err != nil {
		return false
	}
	defer unix.Close(d)
	var v [1]byte
	n, err := unix.Fgetxattr(d, opaqueXattr, v[:])
	return err == nil && n == 1 && v[0] == 'y'
}

// components splits a path into its names, without "" and ".".
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// readlinkAt reads the target of the symlink name in dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, maxPath)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
