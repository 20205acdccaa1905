package layer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Unpack applies the layer r into dst, a directory that must not exist:
// into a fresh sibling first (0755, owned by the layer's root when
// Options.Owner maps it), renamed to dst only once the whole layer
// applied and its digests matched. When it fails, neither dst nor the
// sibling is left. Two Unpacks of one dst race safely: one wins, the
// other answers CodeExists and removes its copy. Nothing is synced to
// disk; a store that needs the layer to survive a crash syncs it.
//
// In Flatten mode the fresh directory starts empty; to apply a layer over
// others, snapshot them (btrfs, reflinks) and Apply onto the snapshot.
func Unpack(ctx context.Context, dst string, r io.Reader, opts Options) (_ Stats, retErr error) {
	dst = filepath.Clean(dst)
	dir, name := filepath.Split(dst)
	if name == "" || name == "." || name == ".." {
		return Stats{}, fmt.Errorf("layer: cannot unpack into %q", dst)
	}
	if dir == "" {
		dir = "."
	}
	if _, err := os.Lstat(dst); err == nil {
		return Stats{}, errdefs.New(errdefs.ErrConflict, CodeExists, "the layer is already unpacked")
	}
	tmp, err := os.MkdirTemp(dir, "."+shorten(name)+".partial-")
	if err != nil {
		return Stats{}, fmt.Errorf("layer: make a directory to unpack into: %w", err)
	}
	defer func() {
		if retErr != nil {
			if err := RemoveAll(tmp); err != nil {
				retErr = fmt.Errorf("%w (and the partial layer stays: %w)", retErr, err)
			}
		}
	}()
	if opts.Owner != nil {
		uid, gid, err := opts.Owner(0, 0)
		if err != nil {
			return Stats{}, errdefs.Wrap(errdefs.ErrInvalid, CodeOwner, err, "the layer's root ids cannot be mapped")
		}
		if err := os.Lchown(tmp, uid, gid); err != nil {
			return Stats{}, fmt.Errorf("layer: own the layer's directory: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Stats{}, fmt.Errorf("layer: open up the layer's directory: %w", err)
	}
	st, err := Apply(ctx, tmp, r, opts)
	if err != nil {
		return st, err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EEXIST {
			return st, errdefs.New(errdefs.ErrConflict, CodeExists, "the layer is already unpacked")
		}
		return st, fmt.Errorf("layer: put the layer in place: %w", err)
	}
	return st, nil
}

// shorten keeps a temporary name within NAME_MAX.
func shorten(name string) string {
	if len(name) > 200 {
		return name[:200]
	}
	return name
}
