package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
)

// The file-by-file copy of a tree that reflink and byte copies share.
// It works on descriptors: each directory is opened once, beneath its
// parent's descriptor, with O_NOFOLLOW, and everything in it is read and
// made with *at calls relative to the two directories' descriptors, so no
// symlink in src is ever followed and a path is never looked up twice.
// Attributes are set in the order that keeps them and needs the fewest
// privileges: xattrs first, while the copy is still the caller's own and
// writable (user.* ones need write permission, ACLs the owner), then the
// owner (chown clears setuid, setgid and security.capability), the mode,
// security.capability and, last, the times; a directory's once its
// contents are in.

// statxMask is what the copy and the usage walk read of each entry.
const statxMask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID

// copier copies one tree.
type copier struct {
	ctx     context.Context
	src     string // for errors
	reflink bool
	mnt     uint64 // the mount id of src's root; 0 when the kernel gives none
	dstRoot int
	// links holds, for each inode with more than one link, the path
	// below the root of the first name copied, which later names link to.
	links map[inodeID]string
	stats CopyStats
	// Buffers kept between files.
	xnames, xvalue, buf []byte
}

type inodeID struct{ dev, ino uint64 }

func idOf(st *unix.Statx_t) inodeID {
	return inodeID{unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino}
}

// copyTree copies the tree src into a new directory name in the directory
// open as parent, with reflinks (method SnapshotReflink, each file copied
// byte by byte where the filesystem refuses) or bytes (SnapshotCopy), and
// syncs the destination's filesystem.
func copyTree(ctx context.Context, src string, parent int, name string, method Snapshot) (CopyStats, error) {
	sfd, err := openSource(unix.AT_FDCWD, src, unix.O_DIRECTORY)
	if err != nil {
		return CopyStats{}, &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(sfd)
	var st unix.Statx_t
	if err := statFd(sfd, &st); err != nil {
		return CopyStats{}, &os.PathError{Op: "statx", Path: src, Err: err}
	}
	c := &copier{
		ctx:     ctx,
		src:     src,
		reflink: method == SnapshotReflink,
		links:   map[inodeID]string{},
		stats:   CopyStats{Method: method},
	}
	if st.Mask&unix.STATX_MNT_ID != 0 {
		c.mnt = st.Mnt_id
	}
	if err := unix.Mkdirat(parent, name, 0o700); err != nil {
		return CopyStats{}, fmt.Errorf("copy %s: mkdir: %w", src, err)
	}
	dfd, err := openDir(parent, name)
	if err != nil {
		return CopyStats{}, fmt.Errorf("copy %s: open the copy: %w", src, err)
	}
	defer unix.Close(dfd)
	c.dstRoot = dfd
	if err := c.copyDir(sfd, dfd, ""); err != nil {
		return CopyStats{}, err
	}
	if err := c.finish(sfd, dfd, parent, name, "", &st); err != nil {
		return CopyStats{}, err
	}
	if err := unix.Syncfs(dfd); err != nil {
		return CopyStats{}, fmt.Errorf("copy %s: syncfs: %w", src, err)
	}
	return c.stats, nil
}

// copyDir copies what the directory sdir holds into ddir; rel is sdir's
// path below the root.
func (c *copier) copyDir(sdir, ddir int, rel string) error {
	names, err := dirent.Names(sdir)
	if err != nil {
		return c.fail("getdents", rel, err)
	}
	for _, name := range names {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if err := c.copyEntry(sdir, ddir, name, path.Join(rel, name)); err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) copyEntry(sdir, ddir int, name, rel string) error {
	var st unix.Statx_t
	err := unix.Statx(sdir, name, unix.AT_SYMLINK_NOFOLLOW, statxMask, &st)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since the directory was read
	}
	if err != nil {
		return c.fail("statx", rel, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return c.copySubdir(sdir, ddir, name, rel)
	}

	if st.Nlink > 1 {
		if first, ok := c.links[idOf(&st)]; ok {
			if err := unix.Linkat(c.dstRoot, first, ddir, name, 0); err != nil {
				return c.fail("link", rel, err)
			}
			c.stats.Files++
			return nil
		}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		err = c.copyFile(sdir, ddir, name, rel)
	case unix.S_IFLNK:
		err = c.copySymlink(sdir, ddir, name, rel, &st)
	default: // devices, fifos, sockets
		err = c.copyNode(sdir, ddir, name, rel, &st)
	}
	if err != nil {
		return err
	}
	if st.Nlink > 1 {
		c.links[idOf(&st)] = rel
	}
	c.stats.Files++
	return nil
}

// copySubdir copies the directory name of sdir into ddir. A mount point
// becomes an empty directory with the mounted root's attributes.
func (c *copier) copySubdir(sdir, ddir int, name, rel string) error {
	sfd, err := openSource(sdir, name, unix.O_DIRECTORY)
	if err != nil {
		return c.fail("open", rel, err)
	}
	defer unix.Close(sfd)
	var st unix.Statx_t
	if err := statFd(sfd, &st); err != nil {
		return c.fail("statx", rel, err)
	}
	if err := unix.Mkdirat(ddir, name, 0o700); err != nil {
		return c.fail("mkdir", rel, err)
	}
	dfd, err := openDir(ddir, name)
	if err != nil {
		return c.fail("open the copy of", rel, err)
	}
	defer unix.Close(dfd)
	c.stats.Dirs++
	if c.mnt != 0 && st.Mnt_id != c.mnt {
		c.stats.Mounts++
	} else if err := c.copyDir(sfd, dfd, rel); err != nil {
		return err
	}
	return c.finish(sfd, dfd, ddir, name, rel, &st)
}

// finish gives the copy dfd (named name in ddir) the attributes of sfd,
// whose statx is st, once its contents are in: a directory's entries, a
// file's data.
func (c *copier) finish(sfd, dfd, ddir int, name, rel string, st *unix.Statx_t) error {
	fcap, err := c.copyXattrs(xattrFd(sfd), xattrFd(dfd), rel)
	if err != nil {
		return err
	}
	if err := unix.Fchown(dfd, int(st.Uid), int(st.Gid)); err != nil {
		return c.fail("chown the copy of", rel, err)
	}
	if err := unix.Fchmod(dfd, uint32(st.Mode)&0o7777); err != nil {
		return c.fail("chmod the copy of", rel, err)
	}
	if err := c.setCapability(xattrFd(dfd), fcap, rel); err != nil {
		return err
	}
	return c.setTimes(ddir, name, rel, st)
}

func (c *copier) copyFile(sdir, ddir int, name, rel string) error {
	// O_NONBLOCK: should a fifo have taken the file's name since the
	// statx, the open does not wait for a writer.
	sfd, err := openSource(sdir, name, unix.O_NONBLOCK)
	if err != nil {
		return c.fail("open", rel, err)
	}
	defer unix.Close(sfd)
	var st unix.Statx_t
	if err := statFd(sfd, &st); err != nil {
		return c.fail("statx", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return c.fail("copy", rel, errors.New("replaced by another kind of file while being copied"))
	}
	dfd, err := unix.Openat(ddir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return c.fail("create the copy of", rel, err)
	}
	defer unix.Close(dfd)
	if err := c.copyData(sfd, dfd, int64(st.Size)); err != nil {
		return c.fail("copy the data of", rel, err)
	}
	c.stats.Bytes += int64(st.Size)
	return c.finish(sfd, dfd, ddir, name, rel, &st)
}

func (c *copier) copySymlink(sdir, ddir int, name, rel string, st *unix.Statx_t) error {
	target, err := readlinkat(sdir, name)
	if err != nil {
		return c.fail("readlink", rel, err)
	}
	if err := unix.Symlinkat(target, ddir, name); err != nil {
		return c.fail("symlink", rel, err)
	}
	return c.finishNode(sdir, ddir, name, rel, st)
}

// copyNode copies a device, fifo or socket: mknod makes each (a
// socket's inode is only a name; nothing listens on it).
func (c *copier) copyNode(sdir, ddir int, name, rel string, st *unix.Statx_t) error {
	dev := unix.Mkdev(st.Rdev_major, st.Rdev_minor)
	if err := unix.Mknodat(ddir, name, uint32(st.Mode)&unix.S_IFMT|0o600, int(dev)); err != nil {
		return c.fail("mknod", rel, err)
	}
	return c.finishNode(sdir, ddir, name, rel, st)
}

// finishNode gives the copy of a symlink, device, fifo or socket its
// attributes, by name: none of them is opened.
func (c *copier) finishNode(sdir, ddir int, name, rel string, st *unix.Statx_t) error {
	dst := xattrAt(ddir, name)
	fcap, err := c.copyXattrs(xattrAt(sdir, name), dst, rel)
	if err != nil {
		return err
	}
	if err := unix.Fchownat(ddir, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return c.fail("chown the copy of", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK { // a symlink's mode is always 0777
		if err := unix.Fchmodat(ddir, name, uint32(st.Mode)&0o7777, 0); err != nil {
			return c.fail("chmod the copy of", rel, err)
		}
	}
	if err := c.setCapability(dst, fcap, rel); err != nil {
		return err
	}
	return c.setTimes(ddir, name, rel, st)
}

func (c *copier) setTimes(ddir int, name, rel string, st *unix.Statx_t) error {
	ts := []unix.Timespec{
		{Sec: st.Atime.Sec, Nsec: int64(st.Atime.Nsec)},
		{Sec: st.Mtime.Sec, Nsec: int64(st.Mtime.Nsec)},
	}
	if err := unix.UtimesNanoAt(ddir, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return c.fail("set the times of the copy of", rel, err)
	}
	return nil
}

// copyData copies size bytes of sfd into dfd: a reflink of the whole file
// when c.reflink and the filesystem takes it, else the data between the
// holes (SEEK_DATA, SEEK_HOLE), so the copy has the same holes.
func (c *copier) copyData(sfd, dfd int, size int64) error {
	if c.reflink {
		err := unix.IoctlFileClone(dfd, sfd)
		if err == nil {
			return nil
		}
		if !cloneRefused(err) {
			return fmt.Errorf("FICLONE: %w", err)
		}
		c.stats.ByteCopied++
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(sfd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // nothing but a hole from off on
		}
		if err != nil {
			return fmt.Errorf("SEEK_DATA: %w", err)
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(sfd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("SEEK_HOLE: %w", err)
		}
		hole = min(hole, size)
		if err := c.copyRange(sfd, dfd, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return unix.Ftruncate(dfd, size)
}

// cloneRefused reports whether FICLONE's err means this pair of files
// cannot share extents (another filesystem, no reflink here, a nodatacow
// or swap file), so a byte copy is the way.
func cloneRefused(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EXDEV) ||
		errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.ENOSYS)
}

// copyRange copies n bytes at off from sfd to the same offset of dfd, in
// the kernel with copy_file_range, through a buffer where it refuses.
func (c *copier) copyRange(sfd, dfd int, off, n int64) error {
	for n > 0 {
		roff, woff := off, off
		w, err := unix.CopyFileRange(sfd, &roff, dfd, &woff, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EOPNOTSUPP) ||
				errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
				return c.copyBuffered(sfd, dfd, off, n)
			}
			return fmt.Errorf("copy_file_range: %w", err)
		}
		if w == 0 {
			return errors.New("the file shrank while being copied")
		}
		off += int64(w)
		n -= int64(w)
	}
	return nil
}

func (c *copier) copyBuffered(sfd, dfd int, off, n int64) error {
	if c.buf == nil {
		c.buf = make([]byte, 1<<20)
	}
	for n > 0 {
		r, err := unix.Pread(sfd, c.buf[:min(n, int64(len(c.buf)))], off)
		if err != nil {
			return fmt.Errorf("pread: %w", err)
		}
		if r == 0 {
			return errors.New("the file shrank while being copied")
		}
		for b := c.buf[:r]; len(b) > 0; {
			w, err := unix.Pwrite(dfd, b, off)
			if err != nil {
				return fmt.Errorf("pwrite: %w", err)
			}
			b, off = b[w:], off+int64(w)
		}
		n -= int64(r)
	}
	return nil
}

// xattrFile names a file for the xattr calls: by descriptor (a regular
// file or directory c opened), or by a path to use without following its
// last component (a symlink, device or fifo, which c never opens),
// reached through its directory's descriptor in /proc/self/fd.
type xattrFile struct {
	fd   int
	path string
}

func xattrFd(fd int) xattrFile { return xattrFile{fd: fd} }

func xattrAt(dir int, name string) xattrFile {
	return xattrFile{fd: -1, path: "/proc/self/fd/" + strconv.Itoa(dir) + "/" + name}
}

func (f xattrFile) list(buf []byte) (int, error) {
	if f.fd >= 0 {
		return unix.Flistxattr(f.fd, buf)
	}
	return unix.Llistxattr(f.path, buf)
}

func (f xattrFile) get(name string, buf []byte) (int, error) {
	if f.fd >= 0 {
		return unix.Fgetxattr(f.fd, name, buf)
	}
	return unix.Lgetxattr(f.path, name, buf)
}

func (f xattrFile) set(name string, value []byte) error {
	if f.fd >= 0 {
		return unix.Fsetxattr(f.fd, name, value, 0)
	}
	return unix.Lsetxattr(f.path, name, value, 0)
}

// xattrCapability holds a file's capabilities, which a chown removes.
const xattrCapability = "security.capability"

// copyXattrs copies every xattr the caller can list on src to dst (trusted.*
// ones are listed only with CAP_SYS_ADMIN) but security.capability, whose
// value it returns, nil when src has none, for setCapability to set once
// the copy has its owner.
func (c *copier) copyXattrs(src, dst xattrFile, rel string) (fcap []byte, _ error) {
	n, err := growing(&c.xnames, src.list)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil // the source filesystem has no xattrs
	}
	if err != nil {
		return nil, c.fail("listxattr", rel, err)
	}
	names := c.xnames[:n]
	for len(names) > 0 {
		end := 0
		for end < len(names) && names[end] != 0 {
			end++
		}
		name := string(names[:end])
		names = names[min(end+1, len(names)):]
		if name == "" {
			continue
		}
		n, err := growing(&c.xvalue, func(b []byte) (int, error) { return src.get(name, b) })
		if errors.Is(err, unix.ENODATA) {
			continue // removed since listed
		}
		if err != nil {
			return nil, c.fail("getxattr "+name+" of", rel, err)
		}
		if name == xattrCapability {
			fcap = append([]byte(nil), c.xvalue[:n]...)
			continue
		}
		if err := dst.set(name, c.xvalue[:n]); err != nil {
			return nil, c.fail("setxattr "+name+" on the copy of", rel, err)
		}
	}
	return fcap, nil
}

// setCapability sets security.capability on dst to fcap, unless nil.
func (c *copier) setCapability(dst xattrFile, fcap []byte, rel string) error {
	if fcap == nil {
		return nil
	}
	if err := dst.set(xattrCapability, fcap); err != nil {
		return c.fail("setxattr "+xattrCapability+" on the copy of", rel, err)
	}
	return nil
}

// growing calls read with *buf, growing it to the size the kernel asks
// for when it is too small (ERANGE), and returns read's count.
func growing(buf *[]byte, read func([]byte) (int, error)) (int, error) {
	if *buf == nil {
		*buf = make([]byte, 4096)
	}
	for range 8 {
		n, err := read(*buf)
		if !errors.Is(err, unix.ERANGE) {
			return n, err
		}
		size, err := read(nil)
		if err != nil {
			return 0, err
		}
		*buf = make([]byte, max(size, 2*len(*buf)))
	}
	return 0, unix.ERANGE
}

// fail wraps err with what was being done to the entry rel below c.src.
func (c *copier) fail(op, rel string, err error) error {
	return fmt.Errorf("copy %s: %s %s: %w", c.src, op, filepath.Join(".", rel), err)
}

// openSource opens name in dir, a directory or file to read, never
// following a symlink, without updating its atime where the caller may
// (O_NOATIME: the owner or CAP_FOWNER).
func openSource(dir int, name string, flags int) (int, error) {
	flags |= unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dir, name, flags|unix.O_NOATIME, 0)
	if errors.Is(err, unix.EPERM) {
		fd, err = unix.Openat(dir, name, flags, 0)
	}
	return fd, err
}

// openDir opens the directory name in dir, not following a symlink.
func openDir(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func statFd(fd int, st *unix.Statx_t) error {
	return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, statxMask, st)
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
