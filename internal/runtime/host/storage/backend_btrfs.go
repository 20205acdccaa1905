package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// btrfsBackend keeps each layer in a subvolume: Copy is a writable
// snapshot, the quota a limit on the subvolume's level-0 qgroup. All of
// it is done with the btrfs ioctls; btrfs-progs is not needed.
//
// A snapshot holds what its source subvolume holds but not the
// subvolumes nested in it, which appear in it as empty directories; hutch
// makes none inside a layer.
//
// Two things the kernel does on its own, which callers may see: a
// snapshot takes its source's qgroup limit with it (the kernel copies a
// level-0 qgroup's limits into the new snapshot's), and a removed
// subvolume's qgroup lingers, counting nothing, until the cleaner has
// freed the subvolume's extents, when the kernel deletes it.
type btrfsBackend struct {
	mountPoint string // for messages, from the probe
}

var _ Backend = (*btrfsBackend)(nil)

func (b *btrfsBackend) Kind() Kind { return Btrfs }

// Make makes dir a subvolume, mode 0700. With qgroups on, the kernel gives
// it its level-0 qgroup.
func (b *btrfsBackend) Make(dir string) error {
	parent, name, err := openParent(dir)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	var args btrfsVolArgs
	if len(name) > btrfsVolNameMax {
		return &os.PathError{Op: "create subvolume", Path: dir, Err: unix.ENAMETOOLONG}
	}
	copy(args.Name[:btrfsVolNameMax], name)
	if err := ioctlPtr(parent, btrfsIocSubvolCreate, unsafe.Pointer(&args)); err != nil {
		return &os.PathError{Op: "BTRFS_IOC_SUBVOL_CREATE", Path: dir, Err: err}
	}
	if err := unix.Fchmodat(parent, name, 0o700, 0); err != nil {
		return &os.PathError{Op: "chmod", Path: dir, Err: err}
	}
	return nil
}

// Copy snapshots src when it is a subvolume on the same filesystem as
// dst; otherwise it copies src file by file with reflinks.
func (b *btrfsBackend) Copy(ctx context.Context, src string, dst string) (CopyStats, error) {
	sfd, err := openSource(unix.AT_FDCWD, src, unix.O_DIRECTORY)
	if err != nil {
		return CopyStats{}, &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(sfd)
	sub, err := isSubvolume(sfd)
	if err != nil {
		return CopyStats{}, &os.PathError{Op: "statx", Path: src, Err: err}
	}
	return copyInPlace(dst, b.Remove, func(parent int, tmp string) (CopyStats, error) {
		if err := ctx.Err(); err != nil {
			return CopyStats{}, err
		}
		if sub {
			err := snapshot(sfd, parent, tmp)
			if err == nil {
				return CopyStats{Method: SnapshotSubvolume}, nil
			}
			if !errors.Is(err, unix.EXDEV) { // EXDEV: dst is on another filesystem
				return CopyStats{}, fmt.Errorf("snapshot %s: %w", src, err)
			}
		}
		return copyTree(ctx, src, parent, tmp, SnapshotReflink)
	})
}

// snapshot makes name in the directory parent a writable snapshot of the
// subvolume src. The kernel commits the snapshot before it returns.
func snapshot(src, parent int, name string) error {
	args := btrfsVolArgsV2{Fd: int64(src)}
	if len(name) > btrfsSubvolNameMaxLen {
		return unix.ENAMETOOLONG
	}
	copy(args.Name[:btrfsSubvolNameMaxLen], name)
	if err := ioctlPtr(parent, btrfsIocSnapCreateV2, unsafe.Pointer(&args)); err != nil {
		return fmt.Errorf("BTRFS_IOC_SNAP_CREATE_V2: %w", err)
	}
	return nil
}

// Remove deletes a subvolume with BTRFS_IOC_SNAP_DESTROY, which returns
// at once and leaves the freeing of its extents to the kernel's cleaner,
// and a plain directory entry by entry, deleting each subvolume in it the
// same way.
func (b *btrfsBackend) Remove(dir string) error {
	parent, name, err := openParent(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := removeBtrfs(parent, name, "."); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// removeBtrfs removes name in the directory parent and all it holds; rel
// is its path below what Remove was given, for errors.
func removeBtrfs(parent int, name, rel string) error {
	var st unix.Statx_t
	err := unix.Statx(parent, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO, &st)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("statx %s: %w", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unlink %s: %w", rel, err)
		}
		return nil
	}
	if st.Ino == btrfsFirstFreeObjectid {
		err := destroySubvolume(parent, name)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		// ENOTEMPTY: it holds subvolumes; EPERM: not root and no
		// user_subvol_rm_allowed; ENOTTY: a directory of another
		// filesystem with that inode number. Empty it, then rmdir,
		// which deletes an empty subvolume (Linux 4.18 and later).
		case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOTTY):
		default:
			return fmt.Errorf("delete subvolume %s: BTRFS_IOC_SNAP_DESTROY: %w", rel, err)
		}
	}
	fd, err := openDir(parent, name)
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	names, err := dirent.Names(fd)
	if err != nil {
		err = fmt.Errorf("getdents %s: %w", rel, err)
	}
	for _, n := range names {
		if err = removeBtrfs(fd, n, path.Join(rel, n)); err != nil {
			break
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("rmdir %s: %w", rel, err)
	}
	return nil
}

// destroySubvolume deletes the subvolume name in the directory parent,
// whatever it holds but other subvolumes (CAP_SYS_ADMIN, or the mount
// option user_subvol_rm_allowed).
func destroySubvolume(parent int, name string) error {
	var args btrfsVolArgs
	if len(name) > btrfsVolNameMax {
		return unix.ENAMETOOLONG
	}
	copy(args.Name[:btrfsVolNameMax], name)
	return ioctlPtr(parent, btrfsIocSnapDestroy, unsafe.Pointer(&args))
}

// SetLimit sets max_rfer of dir's level-0 qgroup with
// BTRFS_IOC_QGROUP_LIMIT (CAP_SYS_ADMIN).
func (b *btrfsBackend) SetLimit(dir string, bytes int64) error {
	if bytes < 0 {
		return errdefs.Invalid("quota_invalid", "a disk limit cannot be negative (%d bytes)", bytes)
	}
	fd, err := openSource(unix.AT_FDCWD, dir, unix.O_DIRECTORY)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	if sub, err := isSubvolume(fd); err != nil {
		return &os.PathError{Op: "statx", Path: dir, Err: err}
	} else if !sub {
		return errdefs.New(errdefs.ErrUnsupported, "quota_unsupported",
			"no disk quota on %s: it is not a btrfs subvolume, and qgroups limit only subvolumes", dir)
	}
	id, err := subvolumeID(fd)
	if err != nil {
		return &os.PathError{Op: "BTRFS_IOC_INO_LOOKUP", Path: dir, Err: err}
	}
	args := btrfsQgroupLimitArgs{Qgroupid: id, Flags: btrfsQgroupLimitMaxRfer, MaxRfer: uint64(bytes)}
	if bytes == 0 {
		args.MaxRfer = btrfsQgroupLimitClear
	}
	err = ioctlPtr(fd, btrfsIocQgroupLimit, unsafe.Pointer(&args))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOTCONN):
		mnt := b.mountPoint
		if m, err := mountOf(dir); err == nil {
			mnt = m.Point
		}
		return errdefs.Wrap(errdefs.ErrUnsupported, "quota_unsupported", err,
			"no disk quota: qgroups are off on the btrfs filesystem at %s; an operator turns them on with `btrfs quota enable %s`", mnt, mnt)
	default:
		return fmt.Errorf("limit the qgroup 0/%d of %s: BTRFS_IOC_QGROUP_LIMIT: %w", id, dir, err)
	}
}

// Usage reads the referenced bytes and limit of dir's qgroup from
// /sys/fs/btrfs/<fsid>/qgroups/0_<id> (Linux 5.9 and later). When dir is
// not a subvolume, qgroups are off, or their numbers are inconsistent
// (until a rescan), it walks the tree instead.
func (b *btrfsBackend) Usage(ctx context.Context, dir string) (Usage, error) {
	fd, err := openSource(unix.AT_FDCWD, dir, unix.O_DIRECTORY)
	if err != nil {
		return Usage{}, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	u, ok := qgroupUsage(fd)
	unix.Close(fd)
	if ok {
		return u, nil
	}
	return walkUsage(ctx, dir)
}

// qgroupUsage is the usage of the subvolume open as fd from its qgroup;
// false when there is no qgroup to read.
func qgroupUsage(fd int) (Usage, bool) {
	if sub, err := isSubvolume(fd); err != nil || !sub {
		return Usage{}, false
	}
	id, err := subvolumeID(fd)
	if err != nil {
		return Usage{}, false
	}
	fsid, err := btrfsFsidOf(fd)
	if err != nil {
		return Usage{}, false
	}
	qgroups := filepath.Join("/sys/fs/btrfs", fsid, "qgroups")
	if v, err := readSysfsInt(filepath.Join(qgroups, "inconsistent")); err != nil || v != 0 {
		return Usage{}, false
	}
	q := filepath.Join(qgroups, "0_"+strconv.FormatUint(id, 10))
	ref, err := readSysfsInt(filepath.Join(q, "referenced"))
	if err != nil {
		return Usage{}, false
	}
	u := Usage{Bytes: ref, Method: UsageQgroup}
	if flags, err := readSysfsInt(filepath.Join(q, "limit_flags")); err == nil && flags&btrfsQgroupLimitMaxRfer != 0 {
		u.Limit, _ = readSysfsInt(filepath.Join(q, "max_referenced"))
	}
	return u, true
}

func readSysfsInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// isSubvolume reports whether fd is the root directory of a btrfs
// subvolume: on btrfs, the directories with inode number 256.
func isSubvolume(fd int) (bool, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_INO, &st); err != nil {
		return false, err
	}
	if st.Ino != btrfsFirstFreeObjectid || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, nil
	}
	magic, err := fdMagic(fd)
	return magic == btrfsMagic, err
}

// subvolumeID is the id of the subvolume holding fd, from
// BTRFS_IOC_INO_LOOKUP, which any user may ask this of.
func subvolumeID(fd int) (uint64, error) {
	args := btrfsInoLookupArgs{Objectid: btrfsFirstFreeObjectid}
	if err := ioctlPtr(fd, btrfsIocInoLookup, unsafe.Pointer(&args)); err != nil {
		return 0, err
	}
	return args.Treeid, nil
}

func fdMagic(fd int) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return int64(uint32(st.Type)), nil
}

// openParent opens the directory holding p, and returns it with p's last
// element.
func openParent(p string) (int, string, error) {
	p = filepath.Clean(p)
	dir, name := filepath.Split(p)
	if name == "" || name == "." || name == ".." || name == "/" {
		return -1, "", fmt.Errorf("%q names no entry in a directory: %w", p, errdefs.ErrInvalid)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, name, nil
}
