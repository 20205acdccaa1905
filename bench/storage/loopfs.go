package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/hutchdev/hutch/internal/runtime/host/loopdev"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// image is the file the benchmark's filesystems live in, one after the
// other, in a temporary directory of its own.
//
// Unless sparse, it is written full of zeros once: in a sparse image every
// block the filesystem writes for the first time is a block the host's
// filesystem must allocate too (and fallocate's unwritten extents must be
// converted, which costs as much), which made a first 1 GiB copy on ext4
// about three times slower than a copy into blocks written before; a real
// disk has no such cost. The filesystems are made and mounted without
// discard, so deleting files never punches holes in it again.
type image struct {
	dir, path string
	size      int64
	sparse    bool
}

// newImage makes the image of size bytes in a new temporary directory.
func newImage(ctx context.Context, size int64, sparse bool) (_ *image, retErr error) {
	dir, err := os.MkdirTemp("", "hutch-bench-storage-")
	if err != nil {
		return nil, err
	}
	img := &image{dir: dir, path: filepath.Join(dir, "fs.img"), size: size, sparse: sparse}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	f, err := os.OpenFile(img.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if sparse {
		return img, f.Truncate(size)
	}
	zeros := make([]byte, 4<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := f.Write(zeros[:min(int64(len(zeros)), size-off)]); err != nil {
			return nil, fmt.Errorf("fill %s: %w", img.path, err)
		}
	}
	return img, f.Sync()
}

// remove removes the image and its directory.
func (img *image) remove() error { return os.RemoveAll(img.dir) }

// loopFS is a filesystem the benchmark made on the image, attached to a
// loop device and mounted.
type loopFS struct {
	typ    string // btrfs, xfs or ext4
	dir    string // where it is mounted
	device string // /dev/loopN
}

// mkfsArgs are the arguments of mkfs.<type> before the image: quiet,
// overwriting the filesystem made before, no discard (which would punch
// holes in the image), and reflinks on xfs (the default of recent
// xfsprogs, said so it holds on older ones).
var mkfsArgs = map[string][]string{
	"btrfs": {"-q", "-f", "-K"},
	"xfs":   {"-q", "-f", "-K", "-m", "reflink=1"},
	"ext4":  {"-q", "-F", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0"},
}

// mountOptions keep each filesystem from discarding freed blocks: btrfs
// discards asynchronously by default on a device that can (a loop device
// can, by punching holes in its file); xfs and ext4 do not by default.
var mountOptions = map[string]string{"btrfs": "nodiscard"}

// mount makes a filesystem of typ on the image (a sparse image is emptied
// first), attaches it to a loop device that detaches itself once
// unmounted, and mounts it on a new directory beside the image. On error
// nothing of it is left mounted; otherwise the caller calls unmount.
func (img *image) mount(typ string) (_ *loopFS, retErr error) {
	args, ok := mkfsArgs[typ]
	if !ok {
		return nil, fmt.Errorf("unknown filesystem %q (btrfs, xfs or ext4)", typ)
	}
	mkfs, err := exec.LookPath("mkfs." + typ)
	if err != nil {
		return nil, fmt.Errorf("mkfs.%s: %w (Debian packages btrfs-progs, xfsprogs, e2fsprogs)", typ, err)
	}
	dir, err := os.MkdirTemp(img.dir, "mnt-"+typ+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			os.Remove(dir)
		}
	}()
	f, err := os.OpenFile(img.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if img.sparse {
		if err := errors.Join(f.Truncate(0), f.Truncate(img.size)); err != nil {
			return nil, err
		}
	}
	args = append(append([]string(nil), args...), img.path)
	if out, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mkfs.%s %s: %w\n%s", typ, strings.Join(args, " "), err, out)
	}
	loop, err := loopdev.Attach(f, img.path)
	if err != nil {
		return nil, err
	}
	fs := &loopFS{typ: typ, dir: dir, device: loop.Name()}
	// Once mounted, the mount holds the device; closing ours leaves the
	// mount as its last user, so the device clears itself at unmount.
	err = unix.Mount(fs.device, fs.dir, typ, 0, mountOptions[typ])
	loop.Close()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mount -t %s %s on %s: %w", typ, fs.device, fs.dir, err), loopdev.WaitDetached(fs.device))
	}
	return fs, nil
}

// unmount unmounts the filesystem (lazily when something still holds it
// after a few seconds), waits for its loop device to detach, and removes
// the mount point.
func (fs *loopFS) unmount() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Unmount(fs.dir, 0)
		if err == nil || errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
			break
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("unmount %s: %w", fs.dir, err)
		}
		if time.Now().After(deadline) {
			if err := unix.Unmount(fs.dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount -l %s: %w", fs.dir, err)
			}
			fmt.Fprintf(os.Stderr, "storage: %s was busy; unmounted lazily\n", fs.dir)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.Join(loopdev.WaitDetached(fs.device), os.Remove(fs.dir))
}
