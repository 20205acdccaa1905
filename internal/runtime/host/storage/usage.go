package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
)

// walkUsage sums the blocks allocated to dir and everything under it
// (st_blocks × 512), each inode once, as du -sx does: symlinks are not
// followed and other mounts not entered. Entries removed while it walks
// are not counted.
func walkUsage(ctx context.Context, dir string) (Usage, error) {
	fd, err := openSource(unix.AT_FDCWD, dir, unix.O_DIRECTORY)
	if err != nil {
		return Usage{}, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Statx_t
	if err := statFd(fd, &st); err != nil {
		return Usage{}, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	w := &usageWalk{ctx: ctx, dir: dir, seen: map[inodeID]bool{}, bytes: int64(st.Blocks) * 512}
	if st.Mask&unix.STATX_MNT_ID != 0 {
		w.mnt = st.Mnt_id
	}
	if err := w.walk(fd, ""); err != nil {
		return Usage{}, err
	}
	return Usage{Bytes: w.bytes, Method: UsageWalk}, nil
}

type usageWalk struct {
	ctx   context.Context
	dir   string
	mnt   uint64
	seen  map[inodeID]bool // inodes with more than one link, counted
	bytes int64
}

func (w *usageWalk) walk(fd int, rel string) error {
	names, err := dirent.Names(fd)
	if err != nil {
		return w.fail("getdents", rel, err)
	}
	for _, name := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		var st unix.Statx_t
		err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW, statxMask, &st)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return w.fail("statx", path.Join(rel, name), err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if st.Nlink > 1 {
				if w.seen[idOf(&st)] {
					continue
				}
				w.seen[idOf(&st)] = true
			}
			w.bytes += int64(st.Blocks) * 512
			continue
		}
		if w.mnt != 0 && st.Mnt_id != w.mnt {
			continue // a mount point: another filesystem's bytes
		}
		w.bytes += int64(st.Blocks) * 512
		sub, err := openSource(fd, name, unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return w.fail("open", path.Join(rel, name), err)
		}
		err = w.walk(sub, path.Join(rel, name))
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *usageWalk) fail(op, rel string, err error) error {
	return fmt.Errorf("usage of %s: %s %s: %w", w.dir, op, filepath.Join(".", rel), err)
}
