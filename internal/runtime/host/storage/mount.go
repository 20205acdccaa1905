package storage

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/mountinfo"
)

// The statfs magic numbers Probe tells apart.
const (
	btrfsMagic   = unix.BTRFS_SUPER_MAGIC
	xfsMagic     = unix.XFS_SUPER_MAGIC
	ext4Magic    = unix.EXT4_SUPER_MAGIC // ext2 and ext3 too
	tmpfsMagic   = unix.TMPFS_MAGIC
	overlayMagic = unix.OVERLAYFS_SUPER_MAGIC
	f2fsMagic    = unix.F2FS_SUPER_MAGIC
	nfsMagic     = unix.NFS_SUPER_MAGIC
	fuseMagic    = unix.FUSE_SUPER_MAGIC
	zfsMagic     = 0x2fc12fc1 // not in x/sys: ZFS is out of tree
)

var fsNames = map[int64]string{
	btrfsMagic:   "btrfs",
	xfsMagic:     "xfs",
	ext4Magic:    "ext4",
	tmpfsMagic:   "tmpfs",
	overlayMagic: "overlayfs",
	f2fsMagic:    "f2fs",
	nfsMagic:     "nfs",
	fuseMagic:    "fuse",
	zfsMagic:     "zfs",
}

// overlayUpperKnown are the filesystems the kernel takes an overlay upper
// layer on, for when Probe cannot try (not root).
var overlayUpperKnown = map[int64]bool{
	btrfsMagic: true,
	xfsMagic:   true,
	ext4Magic:  true,
	tmpfsMagic: true,
	f2fsMagic:  true,
}

func fsMagic(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return int64(uint32(st.Type)), nil // a 32-bit f_type is signed on some platforms
}

func fsName(magic int64) string {
	if n, ok := fsNames[magic]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", magic)
}

// mountOf finds the mount that holds dir: its id from statx, its line in
// /proc/self/mountinfo.
func mountOf(dir string) (Mount, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_MNT_ID, &stx); err != nil {
		return Mount{}, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return Mount{}, fmt.Errorf("statx %s: the kernel gave no mount id (Linux 5.8 or later does)", dir)
	}
	// A read of mountinfo is not atomic: while other mounts come and go
	// it can skip lines, so a mount that is there may be missed; another
	// read finds it.
	var err error
	for range 5 {
		var m Mount
		if m, err = readMount(int(stx.Mnt_id)); err == nil {
			return m, nil
		}
	}
	return Mount{}, fmt.Errorf("the mount of %s: %w", dir, err)
}

// readMount reads /proc/self/mountinfo once for the mount with id.
func readMount(id int) (Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Mount{}, err
	}
	defer f.Close()
	return findMount(f, id)
}

// findMount reads mountinfo (proc(5)) for the mount with id.
func findMount(r io.Reader, id int) (Mount, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m, err := parseMountinfo(sc.Text())
		if err != nil {
			return Mount{}, err
		}
		if m.ID == id {
			return m, nil
		}
	}
	if err := sc.Err(); err != nil {
		return Mount{}, err
	}
	return Mount{}, fmt.Errorf("mount id %d is not in /proc/self/mountinfo", id)
}

// parseMountinfo parses one line of /proc/self/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
func parseMountinfo(line string) (Mount, error) {
	f := strings.Fields(line)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+3 >= len(f) {
		return Mount{}, fmt.Errorf("mountinfo: malformed line %q", line)
	}
	id, err := strconv.Atoi(f[0])
	if err != nil {
		return Mount{}, fmt.Errorf("mountinfo: malformed line %q", line)
	}
	m := Mount{
		ID:     id,
		Point:  mountinfo.Unescape(f[4]),
		Type:   f[sep+1],
		Source: mountinfo.Unescape(f[sep+2]),
	}
	m.Options = strings.Split(f[sep+3], ",")
	return m, nil
}

// hasOption reports whether m's superblock options include any of opts.
func (m Mount) hasOption(opts ...string) bool {
	return slices.ContainsFunc(m.Options, func(o string) bool { return slices.Contains(opts, o) })
}
