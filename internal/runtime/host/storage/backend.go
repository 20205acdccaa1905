package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/layerfs"
)

// Backend does what hutch needs of the filesystem under its data
// directory: make a sandbox's writable layer, copy it whole (a snapshot, a
// restore, a fork), remove it, cap and measure the bytes it holds.
//
// A Backend is picked once from a Probe of the data directory (Open) and
// is safe for concurrent use; it keeps no state between calls, so a
// restart needs nothing to re-attach. Every path it is given is a
// directory hutch owns under the data directory; the trees in them hold a
// sandbox's files exactly as its overlay wrote them (its own uids, overlay
// whiteouts and xattrs), and a Backend moves them without reading them
// any other way.
type Backend interface {
	// Kind is the backend Open picked.
	Kind() Kind
	// Make makes dir, empty, mode 0700, owned by the caller: a btrfs
	// subvolume on btrfs (so it can be snapshotted and given a qgroup),
	// a plain directory elsewhere. dir must not exist.
	Make(dir string) error
	// Copy makes dst, which must not exist, an exact copy of the tree
	// src: a subvolume snapshot on btrfs (constant time whatever the
	// size), reflinked files on xfs (and on btrfs when src is not a
	// subvolume), else a byte copy that keeps holes. Exact means every
	// file type (char and block devices such as overlay whiteouts,
	// fifos, sockets), symlinks, hard links kept as links, modes with
	// setuid, setgid and sticky, numeric owners as on disk, atimes and
	// mtimes, every xattr the caller can read (user.*, trusted.*,
	// security.*, ACLs) and sparse holes. The copy is built under a
	// hidden sibling name and renamed into place, so a failed or
	// cancelled Copy leaves nothing at dst; a Copy that returns nil has
	// been synced to disk. Copies are writable.
	Copy(ctx context.Context, src, dst string) (CopyStats, error)
	// Remove removes dir and all it holds (a subvolume with its qgroup
	// on btrfs, which the kernel drops once its cleaner has freed the
	// subvolume's extents, seconds later). A dir that does not exist is
	// no error.
	Remove(dir string) error
	// SetLimit caps the bytes dir (made by Make) may hold; 0 removes the
	// cap. On btrfs it is a limit on the referenced bytes of the
	// subvolume's level-0 qgroup, and a write past it fails with EDQUOT.
	// Where the backend has no mechanism, or quotas are off, it returns
	// an errdefs.ErrUnsupported error with code "quota_unsupported"
	// whose message says what an operator can do. It never turns quotas
	// on.
	SetLimit(dir string, bytes int64) error
	// Usage is the bytes dir holds: its qgroup's referenced bytes on
	// btrfs with quotas on (as of the filesystem's last commit, at most
	// 30 seconds old by default), else the sum of the blocks allocated to
	// each file under dir, counted once per inode.
	Usage(ctx context.Context, dir string) (Usage, error)
}

type (
	// CopyStats says what a Copy did.
	CopyStats = layerfs.CopyStats
	// UsageMethod is how a Usage was measured.
	UsageMethod = layerfs.UsageMethod
	// Usage is what a directory holds.
	Usage = layerfs.Usage
)

// How a Usage was measured.
const (
	UsageQgroup = layerfs.UsageQgroup
	UsageWalk   = layerfs.UsageWalk
)

// Open picks the backend for the filesystem info describes. It never
// fails: for Kind None it returns a byte-copying backend whose Kind says
// None, and the caller decides whether to run without a working backend.
func Open(info Info) Backend {
	if info.Kind == Btrfs {
		return &btrfsBackend{mountPoint: info.Mount.Point}
	}
	method := SnapshotCopy
	if info.Reflink {
		method = SnapshotReflink
	}
	return &dirBackend{kind: info.Kind, method: method, fs: info.Filesystem, mountPoint: info.Mount.Point}
}

// dirBackend keeps each layer in a plain directory and copies it file by
// file, with reflinks where the filesystem has them (xfs) and bytes
// elsewhere (ext4, tmpfs). It has no disk quota.
type dirBackend struct {
	kind   Kind
	method Snapshot // SnapshotReflink or SnapshotCopy
	// fs and mountPoint name the filesystem, for messages.
	fs, mountPoint string
}

var _ Backend = (*dirBackend)(nil)

func (b *dirBackend) Kind() Kind { return b.kind }

func (b *dirBackend) Make(dir string) error { return makeDir(dir) }

func (b *dirBackend) Copy(ctx context.Context, src, dst string) (CopyStats, error) {
	return copyInPlace(dst, removeAll, func(parent int, tmp string) (CopyStats, error) {
		return copyTree(ctx, src, parent, tmp, b.method)
	})
}

func (b *dirBackend) Remove(dir string) error { return removeAll(dir) }

func (b *dirBackend) SetLimit(dir string, bytes int64) error {
	if bytes < 0 {
		return errdefs.Invalid("quota_invalid", "a disk limit cannot be negative (%d bytes)", bytes)
	}
	return errdefs.New(errdefs.ErrUnsupported, "quota_unsupported",
		"no disk quota on %s at %s: hutch limits a sandbox's disk only with btrfs qgroups, on a data directory on btrfs with `btrfs quota enable <mount point>`",
		b.fs, b.mountPoint)
}

func (b *dirBackend) Usage(ctx context.Context, dir string) (Usage, error) {
	return walkUsage(ctx, dir)
}

// makeDir makes dir, mode 0700 whatever the umask.
func makeDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// removeAll is os.RemoveAll, which removes with *at calls and never
// follows a symlink; a missing dir is no error.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// copyInPlace runs build to make a tree named tmp, a fresh hidden name in
// dst's parent directory (open as parent), and renames it to dst without
// replacing anything there. When build or the rename fails it removes tmp
// with remove. build syncs what it made.
func copyInPlace(dst string, remove func(string) error, build func(parent int, tmp string) (CopyStats, error)) (_ CopyStats, retErr error) {
	parent, base, err := openParent(dst)
	if err != nil {
		return CopyStats{}, err
	}
	defer unix.Close(parent)
	dir := filepath.Dir(filepath.Clean(dst))
	var st unix.Stat_t
	switch err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return CopyStats{}, &os.PathError{Op: "copy", Path: dst, Err: unix.EEXIST}
	case !errors.Is(err, unix.ENOENT):
		return CopyStats{}, &os.PathError{Op: "lstat", Path: dst, Err: err}
	}

	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
	defer func() {
		if retErr != nil {
			if err := remove(filepath.Join(dir, tmp)); err != nil {
				retErr = errors.Join(retErr, fmt.Errorf("removing the partial copy: %w", err))
			}
		}
	}()
	stats, err := build(parent, tmp)
	if err != nil {
		return CopyStats{}, err
	}
	if err := unix.Renameat2(parent, tmp, parent, base, unix.RENAME_NOREPLACE); err != nil {
		return CopyStats{}, &os.LinkError{Op: "rename", Old: filepath.Join(dir, tmp), New: dst, Err: err}
	}
	if err := unix.Fsync(parent); err != nil {
		err = &os.PathError{Op: "fsync", Path: dir, Err: err}
		if rmErr := remove(dst); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing the copy: %w", rmErr))
		}
		return CopyStats{}, err
	}
	return stats, nil
}
