// Package files is the agent's file API: read, atomic write, list, stat,
// mkdir, move and remove, tar upload and download, and the routes of file
// history (checkpoints, restore and diff of a directory, kept by
// internal/agent/history). Every path is resolved inside the sandbox root
// through Root, so nothing the sandbox does to its own tree (a symlink to
// /etc/passwd, to ../../.., a directory swapped for a link) leads the
// agent to a file outside it. Root is how the agent's other parts reach
// the sandbox's files too: a command's working directory, a watched
// directory, the app's manifest.
package files

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// inRoot is how every path of the file API is resolved: symlinks,
// absolute or "..", stay inside root, and /proc magic links are refused.
const inRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// Root is the sandbox root, opened once, and the workdir relative paths
// start from. Every access goes through its directory fd with openat2
// (RESOLVE_IN_ROOT) or an *at call on a parent fd obtained that way, so
// nothing the sandbox does to its own tree can make the agent touch a file
// outside root.
type Root struct {
	path    string // root as the sandbox sees it, clean and absolute
	workdir string // clean, absolute, inside path
	fd      int    // O_PATH|O_DIRECTORY
	real    string // root's path after symlinks, as /proc shows it
}

// OpenRoot opens the sandbox root p, whose relative paths are relative to
// workdir. Both are clean absolute paths, workdir inside p.
func OpenRoot(p, workdir string) (*Root, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open sandbox root %s: %w", p, err)
	}
	rp, err := fdPath(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Root{path: p, workdir: workdir, fd: fd, real: rp}, nil
}

// Close closes the root's fd.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Workdir is the default directory of commands and of relative paths.
func (r *Root) Workdir() string { return r.workdir }

// Resolve checks p lexically against the root and the workdir (see
// resolvePath); what it returns is still to be opened through the root.
func (r *Root) Resolve(p string) (Path, error) {
	return resolvePath(r.path, r.workdir, p)
}

// Open opens rel (relative to root) with openat2 and RESOLVE_IN_ROOT,
// and refuses what that leads onto a proc file system (see onProc).
// mode is used only with O_CREAT.
func (r *Root) Open(rel string, flags int, mode uint32) (int, error) {
	return r.openHow(rel, flags, mode, 0)
}

// openNoLinks is Open that follows no symbolic link on the way either
// (RESOLVE_NO_SYMLINKS): for what the agent does with its own file ids,
// on a path the sandbox's user could otherwise point elsewhere.
func (r *Root) openNoLinks(rel string, flags int, mode uint32) (int, error) {
	return r.openHow(rel, flags, mode, unix.RESOLVE_NO_SYMLINKS)
}

func (r *Root) openHow(rel string, flags int, mode uint32, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: inRoot | resolve}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode)
	}
	fd, err := Openat2(r.fd, rel, &how)
	if err == nil && onProc(fd) {
		unix.Close(fd)
		return -1, procRefused(sandboxPathOf(r.path, rel))
	}
	return fd, err
}

// onProc reports whether fd is on a proc file system, or that it cannot
// tell. The file API serves nothing there. In the namespace driver's root
// (the sandbox's /), /proc/self, /proc/thread-self, /proc/<the agent's
// pid> and /proc/<tid> of each of its threads (listed nowhere, found by
// name), and what leads there (/dev/fd, /proc/net, /proc/mounts, any
// symlink the sandbox makes) are the agent, a process the host started:
// its descriptors' links, exe and map_files name host paths. The rest of
// /proc goes too: the other processes are the sandbox's own commands,
// which read /proc themselves, while the agent would open their entries
// with its capabilities, not theirs; and nothing there was ever served:
// files are read up to their stat size, 0 on proc, and none is writable.
// Magic links (/proc/self/root/…) the resolution refuses already, so no
// path passes through /proc to land elsewhere.
func onProc(fd int) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) != nil || fs.Type == unix.PROC_SUPER_MAGIC
}

// procRefused is the answer for a path onProc refuses.
func procRefused(abs string) error {
	return errdefs.New(errdefs.ErrForbidden, "path_in_proc", "%s leads into /proc, which the file API does not serve: there it would show the agent, not the sandbox; read /proc with a command", abs)
}

// Openat2 is unix.Openat2 retrying the EAGAIN the kernel answers when a
// concurrent rename made it unsure that ".." stayed in root, and EINTR.
func Openat2(dirfd int, p string, how *unix.OpenHow) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, p, how)
		if (err == unix.EAGAIN && i < 16) || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// parent opens the directory holding p (O_PATH) and returns it with p's
// final name, for the *at calls that must not follow that name.
func (r *Root) parent(p Path) (int, string, error) {
	dir, name := p.split()
	fd, err := r.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", Classify(err, path.Dir(p.Abs))
	}
	return fd, name, nil
}

// RealDir resolves the directory p inside root and returns its path as
// the kernel sees it, for a command's working directory.
func (r *Root) RealDir(p Path) (string, error) {
	fd, err := r.Open(p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", Classify(err, p.Abs)
	}
	defer unix.Close(fd)
	rp, err := fdPath(fd)
	if err != nil {
		return "", err
	}
	if r.real != "/" && rp != r.real && !strings.HasPrefix(rp, r.real+"/") {
		return "", errdefs.Invalid("path_outside_sandbox", "%s is outside the sandbox root", p.Abs)
	}
	return rp, nil
}

// fdPath is the path the kernel knows an fd by; it needs /proc.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", fmt.Errorf("resolve a directory through /proc (is /proc mounted?): %w", err)
	}
	return p, nil
}

// statAt describes name in dirfd without following it (lstat), as the
// sandbox path abs.
func statAt(dirfd int, name, abs string) (agentproto.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW|emptyPath(name)); err != nil {
		return agentproto.FileInfo{}, Classify(err, abs)
	}
	fi := fileInfo(abs, &st)
	if fi.Type == agentproto.FileSymlink {
		link, err := readlinkAt(dirfd, name)
		if err != nil {
			return agentproto.FileInfo{}, Classify(err, abs)
		}
		fi.LinkTarget = link
	}
	return fi, nil
}

// emptyPath lets statAt describe dirfd itself when name is "".
func emptyPath(name string) int {
	if name == "" {
		return unix.AT_EMPTY_PATH
	}
	return 0
}

func fileInfo(abs string, st *unix.Stat_t) agentproto.FileInfo {
	return agentproto.FileInfo{
		Name:    path.Base(abs),
		Path:    abs,
		Type:    fileType(st.Mode),
		Size:    st.Size,
		Mode:    fmt.Sprintf("%04o", st.Mode&0o7777),
		ModTime: time.Unix(st.Mtim.Unix()).UTC(),
	}
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return agentproto.FileRegular
	case unix.S_IFDIR:
		return agentproto.FileDir
	case unix.S_IFLNK:
		return agentproto.FileSymlink
	}
	return agentproto.FileOther
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

// parseMode reads octal permission bits such as "0644"; empty means def.
func parseMode(s string, def uint32) (uint32, error) {
	if s == "" {
		return def, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, errdefs.Invalid("invalid_mode", "mode %q is not octal permission bits such as 0644", s)
	}
	return uint32(m), nil
}

// Classify turns a syscall error about the sandbox path abs into a
// classified error whose message names abs and nothing of the host.
func Classify(err error, abs string) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch errno {
	case unix.ENOENT:
		return errdefs.Wrap(errdefs.ErrNotFound, "file_not_found", err, "%s: no such file or directory", abs)
	case unix.ENOTDIR:
		return errdefs.Wrap(errdefs.ErrInvalid, "not_a_directory", err, "%s: a component of the path is not a directory", abs)
	case unix.EISDIR:
		return errdefs.Wrap(errdefs.ErrInvalid, "is_a_directory", err, "%s is a directory", abs)
	case unix.EEXIST:
		return errdefs.Wrap(errdefs.ErrConflict, "file_exists", err, "%s already exists", abs)
	case unix.ENOTEMPTY:
		return errdefs.Wrap(errdefs.ErrConflict, "directory_not_empty", err, "%s is a directory that is not empty", abs)
	case unix.EACCES, unix.EPERM:
		return errdefs.Wrap(errdefs.ErrForbidden, "permission_denied", err, "%s: permission denied", abs)
	case unix.EROFS:
		return errdefs.Wrap(errdefs.ErrForbidden, "read_only", err, "%s is on a read-only file system", abs)
	case unix.ELOOP:
		return errdefs.Wrap(errdefs.ErrInvalid, "invalid_path", err, "%s: too many levels of symbolic links", abs)
	case unix.ENAMETOOLONG:
		return errdefs.Wrap(errdefs.ErrInvalid, "invalid_path", err, "%s: name too long", abs)
	case unix.EXDEV:
		return errdefs.Wrap(errdefs.ErrInvalid, "cross_device", err, "%s: cannot move across file systems", abs)
	case unix.ENOSPC, unix.EDQUOT:
		return errdefs.Wrap(errdefs.ErrTooLarge, "no_space", err, "%s: no space left in the sandbox", abs)
	}
	return fmt.Errorf("%s: %w", abs, err)
}

// tooLarge is the answer for content over MaxFileBytes.
func tooLarge(abs string, limit int64) error {
	return errdefs.New(errdefs.ErrTooLarge, "file_too_large", "%s is larger than the limit of %d bytes", abs, limit)
}
