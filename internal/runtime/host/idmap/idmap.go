package idmap

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/osthread"
)

// mountAttrs are what every mount Mount makes carries besides its
// idmapping: a layer is never written, and nothing in an image gains
// privilege or reaches a device through it.
const mountAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// Mount makes a detached, read-only, nosuid, nodev clone of the directory
// dir (only its own mount, not mounts below it), id-mapped through the
// user namespace usernsFD: an owner the filesystem stores as id n shows as
// the host id that n maps to in that namespace, for every access through
// the mount. It returns the mount's file descriptor (close-on-exec), which
// the caller owns: Attach puts the mount somewhere, and closing the
// descriptor of a mount never attached discards it.
func Mount(dir string, usernsFD int) (int, error) {
	return mount(dir, usernsFD, mountAttrs)
}

// MountWritable is Mount without read-only: for a sandbox's own writable
// layer, kept on disk with the sandbox's own ids (0 for its root), so that
// a snapshot of it starts another sandbox, whatever that one's host ids,
// without a chown. No host user may reach dir: a file its sandbox made
// setuid is, on disk, setuid to the host's id of the same number.
func MountWritable(dir string, usernsFD int) (int, error) {
	return mount(dir, usernsFD, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

func mount(dir string, usernsFD int, attrs uint64) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("clone a mount of %s: open_tree: %w", dir, err)
	}
	attr := unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | attrs,
		Userns_fd: uint64(usernsFD),
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("id-map the mount of %s: mount_setattr: %w", dir, err)
	}
	return fd, nil
}

// UsernsFD opens the user namespace of process pid, for Mount. The
// namespace stays usable for as long as the descriptor is open, even after
// the process ends; the caller closes it.
func UsernsFD(pid int) (int, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the user namespace of process %d: %w", pid, err)
	}
	return fd, nil
}

// Attach moves the detached mounts fds (from Mount) onto targets, in
// order, inside the mount namespace of process pid. A target is an
// absolute path of an existing directory as that namespace sees it, and
// its last component must not be a symbolic link. The mounts then live
// only in that namespace, and end with it, provided the namespace does not
// propagate mounts back to the host's: one made together with its user
// namespace (as the namespace driver makes it) holds slaves of the host's
// shared mounts and does not; one made by root alone from a shared tree
// would.
//
// Attach does not close fds, on success or failure; the caller does (once
// a mount is attached, closing its descriptor leaves it in place). When
// one target fails, Attach unmounts those it had already attached, so the
// namespace is as it found it, and the error names the target. The pid
// must be one the caller knows is still its child (a reaped pid may be
// reused).
//
// The work runs on an OS thread of its own that enters the namespace and
// is then discarded, never returned to Go's scheduler (see the package
// comment).
func Attach(pid int, fds []int, targets []string) error {
	if len(fds) != len(targets) {
		return fmt.Errorf("attach %d mounts onto %d targets", len(fds), len(targets))
	}
	for _, t := range targets {
		if !filepath.IsAbs(t) {
			return fmt.Errorf("attach onto %s: not an absolute path", t)
		}
	}
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the mount namespace of process %d: %w", pid, err)
	}
	defer unix.Close(ns)
	return osthread.Discarded(func() error { return attach(ns, fds, targets) })
}

// attach enters the mount namespace ns on the calling thread, which must
// be locked and never handed back, and moves each mount onto its target.
func attach(ns int, fds []int, targets []string) (retErr error) {
	// setns into a mount namespace refuses a thread that shares its root
	// and working directory with others, and must not move the process's.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the thread's filesystem attributes: %w", err)
	}
	if err := unix.Setns(ns, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter the mount namespace: %w", err)
	}
	var attached []string
	defer func() {
		if retErr == nil {
			return
		}
		for i := len(attached) - 1; i >= 0; i-- {
			unix.Unmount(attached[i], unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
	}()
	for i, fd := range fds {
		if err := moveMount(fd, targets[i]); err != nil {
			return fmt.Errorf("attach onto %s: %w", targets[i], err)
		}
		attached = append(attached, targets[i])
	}
	return nil
}

// moveMount moves the detached mount fd onto the directory target,
// opened first so that a symbolic link in its place is refused rather
// than followed.
func moveMount(fd int, target string) error {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_MAGICLINKS,
	}
	dir, err := unix.Openat2(unix.AT_FDCWD, target, &how)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer unix.Close(dir)
	if err := unix.MoveMount(fd, "", dir, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}
