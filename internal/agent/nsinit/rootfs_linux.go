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
	if err := mountProc(filepath.Join(root, "proc")); err != nil {
		return err
	}
	if err := mountDev(filepath.Join(root, "dev"), c.TmpBytes, c.TTYGID); err != nil {
		return err
	}
	return mountTmpfs(filepath.Join(root, "tmp"), unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+strconv.FormatInt(c.TmpBytes, 10))
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
// it must not see or change.
func mountProc(p string) error {
	if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("nsinit: mount /proc: %w", err)
	}
	for _, name := range maskedProc {
		if err := mask(filepath.Join(p, name)); err != nil {
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

// mask hides p under /dev/null or an empty read-only tmpfs.
func mask(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("nsinit: %w", err)
	}
	if fi.IsDir() {
		err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=555")
	} else {
		err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("nsinit: mask %s: %w", p, err)
	}
	return nil
}

// mountDev makes a minimal /dev: a small tmpfs with the host's harmless
// device nodes bound in, a private devpts instance, a tmpfs /dev/shm and
// the usual links.
func mountDev(dev string, shmBytes int64, ttyGID uint32) error {
	if err := mountTmpfs(dev, unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=65536"); err != nil {
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
	if err := mountTmpfs(filepath.Join(dev, "shm"), unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+strconv.FormatInt(shmBytes, 10)); err != nil {
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
