package namespace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
)

var _ driver.Snapshotter = (*Driver)(nil)

// A snapshot is a copy of a sandbox's writable layer (upper/: the
// overlay's upper directory and its work directory) made by the storage
// backend: a subvolume snapshot on btrfs, reflinks on xfs, bytes
// elsewhere. The layer keeps the sandbox's own ids on disk (state.Mapped,
// or rootless, where every sandbox has hutch's one id), so a copy serves
// any sandbox as it is: Restore puts one in place of a sandbox's layer, a
// create with Spec.Snapshot starts with one.

// canSnapshot says why the sandbox st cannot be copied, or nil.
func (d *Driver) canSnapshot(st state) error {
	if !d.caps.Snapshots {
		return errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported",
			"the namespace driver here cannot copy sandboxes: as root it needs id-mapped mounts (%v)", d.idmapErr)
	}
	if !st.Mapped && !d.rootless {
		return errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported",
			"this sandbox keeps its files under its host ids (made by an earlier hutch, or before id-mapped mounts): it cannot be copied")
	}
	return nil
}

// Snapshot implements driver.Snapshotter: freeze (the sandbox's cgroup,
// where it has one), sync, copy, thaw.
func (d *Driver) Snapshot(ctx context.Context, h driver.Handle, dst string) (driver.SnapshotStats, error) {
	var out driver.SnapshotStats
	st, err := decodeState(h)
	if err != nil {
		return out, err
	}
	if err := d.canSnapshot(st); err != nil {
		return out, err
	}
	upper := filepath.Join(st.Dir, upperDir)
	start := time.Now()
	thaw := func() error { return nil }
	if d.alive(st) {
		if d.cg != nil && st.Cgroup != "" {
			g, err := d.cg.Open(st.Cgroup)
			if err != nil {
				return out, fmt.Errorf("freeze the sandbox: %w", err)
			}
			if thaw, out.Frozen, err = d.freeze(ctx, g); err != nil {
				return out, fmt.Errorf("freeze the sandbox: %w", err)
			}
		}
	} else {
		start = time.Time{}
	}
	stats, err := d.copyLayer(ctx, upper, dst)
	err = errors.Join(err, thaw())
	if !start.IsZero() {
		out.Pause = time.Since(start)
	}
	if err != nil {
		_ = d.removeLayer(dst)
		return out, err
	}
	out.Bytes, out.Files, out.Method = stats.Bytes, stats.Files, string(stats.Method)
	return out, nil
}

// openWork makes the overlay's own work/work of the writable layer in
// dir readable by its owner: overlayfs makes it mode 0, which only root
// reads through (a rootless hutch could neither copy nor remove it). The
// overlay makes it again at each mount.
func (d *Driver) openWork(dir string) error {
	if !d.rootless {
		return nil
	}
	err := os.Chmod(filepath.Join(dir, "work", "work"), 0o700)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the sandbox's work directory: %w", err)
	}
	return nil
}

// copyLayer syncs what the sandbox wrote to src's filesystem, then copies
// src to dst.
func (d *Driver) copyLayer(ctx context.Context, src, dst string) (storage.CopyStats, error) {
	if err := d.openWork(src); err != nil {
		return storage.CopyStats{}, err
	}
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return storage.CopyStats{}, fmt.Errorf("the sandbox's files: %w", err)
	}
	err = unix.Syncfs(fd)
	unix.Close(fd)
	if err != nil {
		return storage.CopyStats{}, fmt.Errorf("sync the sandbox's files: %w", err)
	}
	return d.store.Copy(ctx, src, dst)
}

// Restore implements driver.Snapshotter: stop, put a copy of src in place
// of the sandbox's layer (the old one goes only once the copy is whole),
// write its name again, start.
func (d *Driver) Restore(ctx context.Context, h driver.Handle, src string) (driver.Handle, error) {
	st, err := decodeState(h)
	if err != nil {
		return h, err
	}
	if err := d.canSnapshot(st); err != nil {
		return h, err
	}
	if err := d.killAll(ctx, st); err != nil {
		return h, err
	}
	if err := d.replaceLayer(ctx, st, src, false); err != nil {
		return h, err
	}
	if err := d.writeIdentity(st, filepath.Base(st.Dir)); err != nil {
		return h, err
	}
	return d.Start(ctx, h)
}

// replaceLayer makes a copy of the snapshot src the sandbox's writable
// layer, or, when take, src itself (moved; a copy where it cannot be).
func (d *Driver) replaceLayer(ctx context.Context, st state, src string, take bool) error {
	upper := filepath.Join(st.Dir, upperDir)
	next := filepath.Join(st.Dir, ".upper-"+ids.New())
	moved := take && os.Rename(src, next) == nil
	if !moved {
		if _, err := d.store.Copy(ctx, src, next); err != nil {
			return fmt.Errorf("copy the snapshot: %w", err)
		}
	}
	if err := d.removeLayer(upper); err != nil {
		_ = d.store.Remove(next)
		return fmt.Errorf("remove the sandbox's files: %w", err)
	}
	if err := os.Rename(next, upper); err != nil {
		return fmt.Errorf("put the snapshot in place: %w", err)
	}
	return d.limitDisk(st)
}

// RemoveSnapshot implements driver.Snapshotter.
func (d *Driver) RemoveSnapshot(dir string) error { return d.removeLayer(dir) }

// removeLayer removes a writable layer or a copy of one.
func (d *Driver) removeLayer(dir string) error {
	if err := d.openWork(dir); err != nil {
		return err
	}
	return d.store.Remove(dir)
}

// personalizeCopy is personalize for a sandbox whose writable layer is a
// copy of another's: only its name and hosts are written, and its working
// directory made where missing. Another sandbox wrote these files, so
// every path is resolved inside the layer (os.Root): a link it made leads
// nowhere outside.
func (d *Driver) personalizeCopy(st state, hostname string, acct account, workdir string) error {
	if err := d.writeIdentity(st, hostname); err != nil {
		return err
	}
	root, err := os.OpenRoot(filepath.Join(st.Dir, upperFS))
	if err != nil {
		return fmt.Errorf("the sandbox's files: %w", err)
	}
	defer root.Close()
	for _, p := range parentsOf(workdir) {
		rel := p[1:]
		if _, err := root.Lstat(rel); err == nil {
			continue
		}
		if err := root.Mkdir(rel, 0o755); err != nil {
			return fmt.Errorf("make the sandbox's %s: %w", p, err)
		}
		if err := root.Lchown(rel, d.diskUID(st, acct.id), d.diskGID(st, acct.gid)); err != nil {
			return fmt.Errorf("make the sandbox's %s: %w", p, err)
		}
	}
	return nil
}

// writeIdentity writes the sandbox's name and hosts into its writable
// layer, replacing what a copy from another sandbox holds; paths are
// resolved inside the layer.
func (d *Driver) writeIdentity(st state, hostname string) error {
	root, err := os.OpenRoot(filepath.Join(st.Dir, upperFS))
	if err != nil {
		return fmt.Errorf("the sandbox's files: %w", err)
	}
	defer root.Close()
	if fi, err := root.Lstat("etc"); err != nil || !fi.IsDir() {
		// Gone or not a directory: the sandbox's own doing; made again.
		if err := root.RemoveAll("etc"); err != nil {
			return fmt.Errorf("the sandbox's /etc: %w", err)
		}
		if err := root.Mkdir("etc", 0o755); err != nil {
			return fmt.Errorf("the sandbox's /etc: %w", err)
		}
		if err := root.Lchown("etc", d.diskUID(st, rootID), d.diskGID(st, rootID)); err != nil {
			return fmt.Errorf("the sandbox's /etc: %w", err)
		}
	}
	etc := sandboxEtc(hostname, "/bin/sh")
	for _, name := range []string{"hostname", "hosts"} {
		p := "etc/" + name
		// Replaced, never written through: the file may be a link.
		tmp := p + ".hutch-" + ids.New()
		err := root.WriteFile(tmp, []byte(etc[name]), 0o644)
		if err == nil {
			err = root.Lchown(tmp, d.diskUID(st, rootID), d.diskGID(st, rootID))
		}
		if err == nil {
			err = root.Rename(tmp, p)
		}
		if err != nil {
			_ = root.Remove(tmp)
			return fmt.Errorf("write the sandbox's /etc/%s: %w", name, err)
		}
	}
	return nil
}
