package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The btrfs ioctls Probe and the btrfs backend use (linux/btrfs.h); x/sys
// does not carry them.
const (
	btrfsIocSubvolCreate  = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	btrfsIocSnapDestroy   = 0x5000940f // _IOW(0x94, 15, struct btrfs_ioctl_vol_args)
	btrfsIocInoLookup     = 0xd0009412 // _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)
	btrfsIocSnapCreateV2  = 0x50009417 // _IOW(0x94, 23, struct btrfs_ioctl_vol_args_v2)
	btrfsIocFsInfo        = 0x8400941f // _IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)
	btrfsIocQgroupLimit   = 0x8030942b // _IOR(0x94, 43, struct btrfs_ioctl_qgroup_limit_args)
	btrfsVolNameMax       = 4087
	btrfsSubvolNameMaxLen = 4039
	btrfsInoLookupPathMax = 4080

	// btrfsFirstFreeObjectid is the inode number of every subvolume's
	// root directory, and the objectid BTRFS_IOC_INO_LOOKUP takes to
	// answer with the subvolume's id alone.
	btrfsFirstFreeObjectid = 256
	// btrfsQgroupLimitMaxRfer: the limit args set max_rfer.
	btrfsQgroupLimitMaxRfer = 1 << 0
	// btrfsQgroupLimitClear, as a limit, removes it.
	btrfsQgroupLimitClear = ^uint64(0)
)

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	Fd   int64
	Name [btrfsVolNameMax + 1]byte
}

// btrfsVolArgsV2 is struct btrfs_ioctl_vol_args_v2.
type btrfsVolArgsV2 struct {
	Fd      int64
	Transid uint64
	Flags   uint64
	Unused  [4]uint64 // the union with size and qgroup_inherit
	Name    [btrfsSubvolNameMaxLen + 1]byte
}

// btrfsFsInfoArgs is struct btrfs_ioctl_fs_info_args.
type btrfsFsInfoArgs struct {
	MaxID          uint64
	NumDevices     uint64
	Fsid           [16]byte
	Nodesize       uint32
	Sectorsize     uint32
	CloneAlignment uint32
	CsumType       uint16
	CsumSize       uint16
	Flags          uint64
	Generation     uint64
	MetadataUUID   [16]byte
	Reserved       [944]byte
}

// btrfsInoLookupArgs is struct btrfs_ioctl_ino_lookup_args.
type btrfsInoLookupArgs struct {
	Treeid   uint64
	Objectid uint64
	Name     [btrfsInoLookupPathMax]byte
}

// btrfsQgroupLimitArgs is struct btrfs_ioctl_qgroup_limit_args with its
// struct btrfs_qgroup_limit.
type btrfsQgroupLimitArgs struct {
	Qgroupid uint64
	Flags    uint64
	MaxRfer  uint64
	MaxExcl  uint64
	RsvRfer  uint64
	RsvExcl  uint64
}

// The kernel's sizes of the structs above.
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsVolArgs{})-4096]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsVolArgsV2{})-4096]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsFsInfoArgs{})-1024]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsInoLookupArgs{})-4096]
var _ = [1]struct{}{}[unsafe.Sizeof(btrfsQgroupLimitArgs{})-48]

func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// trySubvolumeSnapshot makes a subvolume in dir, snapshots it, and removes
// both (an empty subvolume goes with rmdir, Linux 4.18 and later).
func trySubvolumeSnapshot(dir string) (retErr error) {
	parent, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(parent)

	var create btrfsVolArgs
	copy(create.Name[:btrfsVolNameMax], "subvolume")
	if err := ioctlPtr(parent, btrfsIocSubvolCreate, unsafe.Pointer(&create)); err != nil {
		return fmt.Errorf("BTRFS_IOC_SUBVOL_CREATE: %w", err)
	}
	sv := filepath.Join(dir, "subvolume")
	defer removeSubvolume(sv, &retErr)

	src, err := unix.Open(sv, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: sv, Err: err}
	}
	defer unix.Close(src)
	snap := btrfsVolArgsV2{Fd: int64(src)}
	copy(snap.Name[:btrfsSubvolNameMaxLen], "snapshot")
	if err := ioctlPtr(parent, btrfsIocSnapCreateV2, unsafe.Pointer(&snap)); err != nil {
		return fmt.Errorf("BTRFS_IOC_SNAP_CREATE_V2: %w", err)
	}
	removeSubvolume(filepath.Join(dir, "snapshot"), &retErr)
	return retErr
}

func removeSubvolume(path string, retErr *error) {
	if err := unix.Rmdir(path); err != nil && *retErr == nil {
		*retErr = fmt.Errorf("removing subvolume: %w", &os.PathError{Op: "rmdir", Path: path, Err: err})
	}
}

// btrfsQuota reads whether qgroups are on for the btrfs filesystem
// holding dir, from /sys/fs/btrfs/<fsid>/qgroups (Linux 5.9 and later),
// which exists only while they are. mountPoint goes in the hint.
func btrfsQuota(dir, mountPoint string) Quota {
	q := Quota{Mechanism: QuotaQgroup}
	fsid, err := btrfsFsid(dir)
	if err != nil {
		q.Hint = fmt.Sprintf("could not read the filesystem's id to find its quota state: %v", err)
		return q
	}
	sys := filepath.Join("/sys/fs/btrfs", fsid)
	if _, err := os.Stat(sys); err != nil {
		q.Hint = fmt.Sprintf("could not read the quota state: %v", err)
		return q
	}
	qgroups := filepath.Join(sys, "qgroups")
	if _, err := os.Stat(qgroups); errors.Is(err, os.ErrNotExist) {
		q.Hint = "qgroups are off on this filesystem; an operator turns them on with `btrfs quota enable " + mountPoint + "`"
		return q
	} else if err != nil {
		q.Hint = fmt.Sprintf("could not read the quota state: %v", err)
		return q
	}
	q.Enabled = true
	if b, err := os.ReadFile(filepath.Join(qgroups, "inconsistent")); err == nil && strings.TrimSpace(string(b)) == "1" {
		q.Hint = "qgroup numbers are inconsistent until a rescan (`btrfs quota rescan " + mountPoint + "`); limits are enforced on them as they are"
	}
	return q
}

// btrfsFsid is the UUID of the btrfs filesystem holding dir, as sysfs
// names it.
func btrfsFsid(dir string) (string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return btrfsFsidOf(fd)
}

// btrfsFsidOf is btrfsFsid of the file open as fd.
func btrfsFsidOf(fd int) (string, error) {
	var args btrfsFsInfoArgs
	if err := ioctlPtr(fd, btrfsIocFsInfo, unsafe.Pointer(&args)); err != nil {
		return "", fmt.Errorf("BTRFS_IOC_FS_INFO: %w", err)
	}
	u := args.Fsid
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
