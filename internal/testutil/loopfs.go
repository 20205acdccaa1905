package testutil

import (
	"errors"
	"fmt"
	"github.com/hutchdev/hutch/internal/runtime/host/loopdev"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LoopFSConfig says which filesystem LoopFS makes.
type LoopFSConfig struct {
	// Type is "btrfs", "xfs" or "ext4": LoopFS runs mkfs.<Type>.
	Type string
	// Size is the image's size in bytes (the file is sparse). 0 is 512
	// MiB, above the smallest each mkfs accepts (xfs wants 300 MiB).
	Size int64
	// Mkfs are extra arguments to mkfs.<Type>, such as "-m", "reflink=0"
	// or "-O", "quota,project".
	Mkfs []string
	// Options is the mount's data, such as "prjquota"; empty for none.
	Options string
}

// LoopFS is a filesystem one test made: an image file in the test's
// temporary directory, attached to a loop device and mounted on Dir.
type LoopFS struct {
	Dir    string // where it is mounted
	Device string // the loop device, /dev/loopN
	Image  string // the image file
	Type   string
}

// mkfsPackage names the Debian package of each mkfs the helper runs.
var mkfsPackage = map[string]string{
	"btrfs": "btrfs-progs",
	"xfs":   "xfsprogs",
	"ext4":  "e2fsprogs",
}

// NewLoopFS makes, attaches and mounts a filesystem of cfg.Type for t,
// and on t's cleanup unmounts it (lazily if it is busy) and detaches the
// loop device, whether t passed or not. It skips t, saying why, when it
// cannot run here: not root, no loop devices, no mkfs.<Type>, a kernel
// without the filesystem. Any other failure fails t.
func NewLoopFS(t testing.TB, cfg LoopFSConfig) *LoopFS {
	t.Helper()
	fs, err := TryLoopFS(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TryLoopFS is NewLoopFS for a test that records what the kernel refuses:
// when the mount itself fails (an option this kernel does not support) it
// returns the error, with the loop device already detached, instead of
// failing t.
func TryLoopFS(t testing.TB, cfg LoopFSConfig) (*LoopFS, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to attach a loop device and mount it; CI runs this as root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("no loop devices here (%v); a container needs /dev/loop-control and CAP_SYS_ADMIN", err)
	}
	pkg, ok := mkfsPackage[cfg.Type]
	if !ok {
		t.Fatalf("LoopFS: unknown filesystem type %q", cfg.Type)
	}
	mkfs, err := exec.LookPath("mkfs." + cfg.Type)
	if err != nil {
		t.Skipf("mkfs.%s not found (Debian package %s): %v", cfg.Type, pkg, err)
	}
	if !kernelHas(cfg.Type) {
		t.Skipf("this kernel has no %s filesystem (not in /proc/filesystems, and modprobe %s failed)", cfg.Type, cfg.Type)
	}
	size := cfg.Size
	if size == 0 {
		size = 512 << 20
	}

	// Directories first: t.TempDir's removal then runs after the cleanup
	// below (cleanups run last registered, first run).
	base := t.TempDir()
	fs := &LoopFS{
		Dir:   filepath.Join(base, "mnt"),
		Image: filepath.Join(base, cfg.Type+".img"),
		Type:  cfg.Type,
	}
	if err := os.Mkdir(fs.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := os.OpenFile(fs.Image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if err := img.Truncate(size); err != nil {
		t.Fatal(err)
	}
	args := append(mkfsQuiet(cfg.Type), cfg.Mkfs...)
	args = append(args, fs.Image)
	if out, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.%s %s: %v\n%s", cfg.Type, strings.Join(args, " "), err, out)
	}

	// The loop device clears itself when its last user (the mount, or
	// loop below until the mount holds it) lets go: a test that leaves
	// the mount lazily unmounted still frees the device once it is idle.
	loop, err := loopdev.Attach(img, fs.Image)
	if err != nil {
		t.Fatal(err)
	}
	fs.Device = loop.Name()
	mountErr := unix.Mount(fs.Device, fs.Dir, cfg.Type, 0, cfg.Options)
	loop.Close()
	if mountErr != nil {
		if err := loopdev.WaitDetached(fs.Device); err != nil {
			t.Error(err)
		}
		return nil, fmt.Errorf("mount -t %s -o %q %s (%s): %w (the kernel's reason is in dmesg)",
			cfg.Type, cfg.Options, fs.Device, fs.Image, mountErr)
	}
	t.Cleanup(func() { fs.cleanup(t) })
	return fs, nil
}

// cleanup unmounts fs, lazily when something still holds it, and checks
// that its loop device detached.
func (fs *LoopFS) cleanup(t testing.TB) {
	if err := unmount(t, fs.Dir); err != nil {
		t.Errorf("LoopFS: %v", err)
		return
	}
	// Autoclear detaches it when its last user goes.
	err := loopdev.WaitDetached(fs.Device)
	if err == nil {
		return
	}
	// A namespace-driver sandbox another package's test server keeps warm
	// holds a copy of the host's mounts, this one's too, until it is
	// claimed or its server stops; autoclear frees the device then. Only a
	// mount left in the test binary's own namespace, or a device no
	// namespace mounts (an open file holds it), is this test's leak.
	ours, others := loopHolders(fs.Device)
	if !ours && len(others) > 0 {
		t.Logf("LoopFS: %s is still attached, held only by the mount namespaces of %v; it detaches when they end", fs.Device, others)
		return
	}
	t.Error(err)
}

// unmount unmounts dir. While it is busy it retries for a second (a fork
// elsewhere in the test binary holds a copy of every open descriptor until
// it execs), then detaches it lazily. A dir no longer mounted is no error.
func unmount(t testing.TB, dir string) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := unix.Unmount(dir, 0)
		switch {
		case err == nil, errors.Is(err, unix.EINVAL): // EINVAL: the test unmounted it
			return nil
		case !errors.Is(err, unix.EBUSY):
			return fmt.Errorf("unmount %s: %w", dir, err)
		case time.Now().After(deadline):
			t.Logf("%s is busy (a file or process of the test still holds it); unmounting lazily", dir)
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount -l %s: %w", dir, err)
			}
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mkfsQuiet are the arguments that make each mkfs quiet and format a
// plain file without asking.
func mkfsQuiet(typ string) []string {
	switch typ {
	case "btrfs":
		return []string{"-q"}
	case "xfs":
		return []string{"-q"}
	default: // ext4
		return []string{"-q", "-F"}
	}
}

// kernelHas reports whether the kernel knows filesystem typ, loading its
// module when it is one.
func kernelHas(typ string) bool {
	has := func() bool {
		b, err := os.ReadFile("/proc/filesystems")
		if err != nil {
			return true // let the mount say
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == typ {
				return true
			}
		}
		return false
	}
	if has() {
		return true
	}
	exec.Command("modprobe", typ).Run()
	return has()
}

// Tmpfs mounts a new tmpfs (with options, such as "size=64m", or none) on
// a directory of t's and unmounts it, lazily if busy, on t's cleanup. It
// skips t when not root.
func Tmpfs(t testing.TB, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a tmpfs; CI runs this as root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, options); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unmount(t, dir); err != nil {
			t.Errorf("Tmpfs: %v", err)
		}
	})
	return dir
}
