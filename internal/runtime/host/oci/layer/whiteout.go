package layer

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// opaqueXattr marks an overlayfs directory opaque when the overlay is
// mounted with userxattr, as internal/agent/nsinit mounts a sandbox's root (a
// user namespace may write user.* xattrs, never trusted.*).
const opaqueXattr = "user.overlay.opaque"

// whiteout applies ".wh.<name>" (the entry name is raw, for messages; dir
// and base are checked). ".wh..wh..opq" makes dir opaque; other
// ".wh..wh." names are AUFS's bookkeeping and skipped.
func (a *applier) whiteout(raw, dir, base string) error {
	if base == whiteoutOpaque {
		return a.opaque(raw, dir)
	}
	if strings.HasPrefix(base, whiteoutMeta) {
		a.skip(raw, "whiteout_meta")
		return nil
	}
	target := base[len(whiteoutPrefix):]
	if target == "" || target == "." || target == ".." {
		return errdefs.Invalid(CodeInvalidWhiteout, "layer entry %q is a whiteout of %q, which names no file", trunc(raw), target)
	}
	var err error
	if a.opts.Mode == Layer {
		err = a.layerWhiteout(dir, target)
	} else {
		err = a.flatWhiteout(dir, target)
	}
	return ioError(err, raw)
}

// flatWhiteout deletes dir/target and all it holds. A directory that is
// not there, or not a directory, holds nothing to delete.
func (a *applier) flatWhiteout(dir, target string) error {
	fd, phys, err := a.openDir(dir, false)
	if isNotExist(err) || err == unix.ENOTDIR {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := lstatAt(fd, target); isNotExist(err) {
		return nil
	}
	if err := a.writable(fd, phys); err != nil {
		return err
	}
	if err := a.removeAt(fd, target); err != nil {
		return err
	}
	a.stats.Whiteouts = append(a.stats.Whiteouts, joinRel(phys, target))
	return nil
}

// layerWhiteout records the whiteout as overlayfs does: a character device
// 0/0 at dir/target, which any user may make (Linux 5.8).
func (a *applier) layerWhiteout(dir, target string) (retErr error) {
	fd, phys, err := a.openDir(dir, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := a.writable(fd, phys); err != nil {
		return err
	}
	at, err := create(fd, target, func(n string) error { return unix.Mknodat(fd, n, unix.S_IFCHR, 0) })
	if err != nil {
		if err == unix.EPERM || err == unix.EOPNOTSUPP || err == unix.EINVAL {
			return errdefs.Wrap(errdefs.ErrUnsupported, CodeWhiteoutUnsupported, err, "the layer store cannot hold overlayfs whiteouts here; unpack the image flattened")
		}
		return err
	}
	defer func() {
		if retErr != nil {
			unix.Unlinkat(fd, at, 0)
		}
	}()
	if err := a.replace(fd, at, target); err != nil {
		return err
	}
	a.stats.Whiteouts = append(a.stats.Whiteouts, joinRel(phys, target))
	return nil
}

// opaque makes dir opaque: what the layers below put in it is hidden, what
// this layer puts in it (before or after the marker) stays. dir becomes a
// directory of this layer if it was not one.
func (a *applier) opaque(raw, dir string) error {
	var fd int
	var phys string
	var err error
	if dir == "." {
		fd, phys, err = a.openDir(".", false)
	} else {
		fd, phys, err = a.ensureDir(dir)
	}
	if err != nil {
		return ioError(err, raw)
	}
	defer unix.Close(fd)
	node, _ := a.names.lookup(phys, true)
	if _, done := a.opaqued[node]; done {
		return nil
	}
	a.opaqued[node] = struct{}{}
	a.stats.Opaque = append(a.stats.Opaque, phys)
	if a.opts.Mode == Layer {
		return ioError(a.markOpaque(fd, "", phys), raw)
	}
	return ioError(a.clear(fd, phys, node, 0), raw)
}

// markOpaque sets the opaque xattr on name in dirfd ("" for dirfd).
func (a *applier) markOpaque(dirfd int, name, phys string) error {
	if name == "" {
		name = "."
	}
	fd, err := openat2(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsetxattr(fd, opaqueXattr, []byte("y"), 0); err != nil {
		if err == unix.EPERM || err == unix.EOPNOTSUPP {
			return errdefs.Wrap(errdefs.ErrUnsupported, CodeWhiteoutUnsupported, err, "the layer store cannot hold overlayfs's opaque mark on %q; unpack the image flattened", phys)
		}
		return err
	}
	return nil
}

// clear deletes what dirfd (at phys, node in names) holds that this layer
// did not make, and the same in the directories this layer made or
// entered inside it.
func (a *applier) clear(dirfd int, phys string, node int32, depth int) error {
	if depth > maxDepth {
		return errdefs.Invalid(CodeNameTooLong, "the layer's tree is deeper than %d directories", maxDepth)
	}
	if err := a.writable(dirfd, phys); err != nil {
		return err
	}
	names, err := listDir(dirfd)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		child, ok := a.names.child(node, name)
		if !ok || !a.names.nodes[child].ours {
			if err := a.removeAt(dirfd, name); err != nil {
				return err
			}
			continue
		}
		st, err := lstatAt(dirfd, name)
		if err != nil || !isDir(&st) {
			continue
		}
		fd, err := openat2(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
		if err != nil {
			return err
		}
		err = a.clear(fd, joinRel(phys, name), child, depth+1)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}
