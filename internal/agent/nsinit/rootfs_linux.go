package nsinit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// devices are the host device nodes bound into the sandbox's /dev. A user
// namespace cannot make device nodes; binding the host's is how every
// rootless container runtime gives them.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devLinks are the usual symlinks of /dev.
var devLinks = map[string]string{
	"ptmx": "pts/ptmx", "fd": "/proc/self/fd",
	"stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
}

// maskedProc are /proc entries that describe the host rather than the
// sandbox, or poke at the kernel: covered by /dev/null (files) or an empty
// read-only tmpfs (directories).
var maskedProc = []string{
	"acpi", "asound", "kcore", "keys", "latency_stats", "sched_debug", "scsi",
	"timer_list", "timer_stats", "sysrq-trigger", "kallsyms", "kpagecount",
	"kpageflags", "kpagecgroup",
}

// readOnlyProc are /proc entries the sandbox may read but never write.
var readOnlyProc = []string{"bus", "fs", "irq", "sys"}

// buildRoot mounts the sandbox's root at c.Rootfs, relative to the working
// directory (the sandbox's host directory).
func buildRoot(c *Config) error {
	// userxattr: overlayfs keeps its metadata in user.* xattrs, the ones a
	// user namespace may write.
	opts := "lowerdir=" + c.lowerdir() + ",upperdir=" + c.Upper + ",workdir=" + c.Work + ",userxattr"
	if err := unix.Mount("overlay", c.Rootfs, "overlay", 0, opts); err != nil {
		return fmt.Errorf("nsinit: mount the overlay root: %w", err)
	}
	root := c.Rootfs
	for _, p := range c.ReadOnly {
		if err := bindReadOnly(p, filepath.Join(root, p), true); err != nil {
			return err
		}
	}
	if err := bindVolumes(root, c.Binds); err != nil {
		return err
	}
	for _, p := range c.Sealed {
		q := filepath.Join(root, p)
		if err := bindReadOnly(q, q, true); err != nil {
			return err
		}
	}
	scratch := filepath.Join(root, "tmp")
	if err := mountScratch(scratch, c.TmpBytes); err != nil {
		return err
	}
	if err := mountProc(filepath.Join(root, "proc"), filepath.Join(scratch, "empty")); err != nil {
		return err
	}
	if err := mountDev(filepath.Join(root, "dev"), scratch, c.TTYGID); err != nil {
		return err
	}
	return bind(filepath.Join(scratch, "tmp"), scratch, unix.MS_NOSUID|unix.MS_NODEV)
}

// mountScratch mounts the one tmpfs behind /dev, /dev/shm and /tmp at dir
// (the root's /tmp, where it is staged) with a directory for each and an
// empty read-only one that masks directories of /proc; mountDev binds its
// parts into place and buildRoot binds its tmp over dir last, which hides
// the rest. One file system instead of one for each: the kernel registers
// a shrinker for every file system, and sizes an array for every memory
// cgroup on the host by how many there are, so a sandbox's file systems
// cost memory in every other sandbox's group (bench/README, issue 23).
// The three share size bytes.
func mountScratch(dir string, size int64) error {
	if err := mountTmpfs(dir, unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size="+strconv.FormatInt(size, 10)); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{"dev", 0o755}, {"shm", 0o1777}, {"tmp", 0o1777}, {"empty", 0o555}} {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("nsinit: %w", err)
		}
		if err := unix.Chmod(p, d.mode); err != nil { // Mkdir's mode passes the umask; os.Chmod takes no sticky bit as 0o1000
			return fmt.Errorf("nsinit: chmod %s: %w", p, err)
		}
	}
	return nil
}

// bind binds src onto dst with flags (MS_NOSUID, MS_NODEV, MS_NOEXEC,
// MS_RDONLY) on the new mount.
func bind(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("nsinit: bind %s: %w", dst, err)
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
		return fmt.Errorf("nsinit: set the flags of %s: %w", dst, err)
	}
	return nil
}

// bindReadOnly binds src onto dst and makes the bind read-only, nosuid and
// nodev. The remount keeps the source's noexec and atime flags: a user
// namespace may not clear flags the host set.
func bindReadOnly(src, dst string, recursive bool) error {
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		return fmt.Errorf("nsinit: bind %s: %w", src, err)
	}
	return remountReadOnly(dst)
}

func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("nsinit: statfs %s: %w", p, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("nsinit: make %s read-only: %w", p, err)
	}
	return nil
}

// mountProc mounts a /proc of the sandbox's pid namespace and masks what
// it must not see or change, directories with the empty directory empty.
func mountProc(p, empty string) error {
	if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("nsinit: mount /proc: %w", err)
	}
	for _, name := range maskedProc {
		if err := mask(filepath.Join(p, name), empty); err != nil {
			return err
		}
	}
	for _, name := range readOnlyProc {
		q := filepath.Join(p, name)
		if _, err := os.Lstat(q); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := bindReadOnly(q, q, true); err != nil {
			return err
		}
	}
	return nil
}

// mask hides p under /dev/null or the empty directory empty, read-only.
func mask(p, empty string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nsinit: %w", err)
	}
	if fi.IsDir() {
		return bind(empty, p, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
	}
	if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("nsinit: mask %s: %w", p, err)
	}
	return nil
}

// mountDev makes a minimal /dev from the scratch file system's dev, with
// the host's harmless device nodes bound in, a private devpts, the scratch
// file system's shm as /dev/shm and the usual links.
func mountDev(dev, scratch string, ttyGID uint32) error {
	if err := bind(filepath.Join(scratch, "dev"), dev, unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, name := range devices {
		p := filepath.Join(dev, name)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return fmt.Errorf("nsinit: %w", err)
		}
		if err := unix.Mount("/dev/"+name, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("nsinit: bind /dev/%s: %w", name, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return fmt.Errorf("nsinit: %w", err)
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620,gid="+strconv.FormatUint(uint64(ttyGID), 10)); err != nil {
		return fmt.Errorf("nsinit: mount /dev/pts: %w", err)
	}
	if err := bind(filepath.Join(scratch, "shm"), filepath.Join(dev, "shm"), unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("nsinit: %w", err)
		}
	}
	return nil
}

func mountTmpfs(p string, flags uintptr, opts string) error {
	if err := unix.Mount("tmpfs", p, "tmpfs", flags, opts); err != nil {
		return fmt.Errorf("nsinit: mount tmpfs on %s: %w", p, err)
	}
	return nil
}
