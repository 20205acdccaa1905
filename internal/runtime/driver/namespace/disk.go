package namespace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
)

var _ driver.DiskMeter = (*Driver)(nil)

// A sandbox's disk limit caps its writable layer with the storage
// backend's quota (a btrfs qgroup on the layer's subvolume); a write past
// it fails with EDQUOT inside. The layer is all a sandbox writes to disk:
// /tmp and /dev/shm are tmpfs, charged to its memory limit.

// diskLimits reports whether the storage backend can cap a writable
// layer here, by trying it on one it makes and removes.
func (d *Driver) diskLimits() bool {
	if d.store.Kind() != storage.Btrfs {
		return false
	}
	trial, err := os.MkdirTemp(d.dir, ".disk-limit-")
	if err != nil {
		return false
	}
	defer os.Remove(trial)
	p := filepath.Join(trial, "layer")
	if err := d.store.Make(p); err != nil {
		return false
	}
	defer d.store.Remove(p)
	if err := d.store.SetLimit(p, 1<<30); err != nil {
		d.log.Info("namespace driver: no disk limits", "err", err)
		return false
	}
	return true
}

// limitDisk applies the sandbox's disk limit to its writable layer (a
// copy of a snapshot keeps the limit of the layer it was taken of).
func (d *Driver) limitDisk(st state) error {
	if st.Limits.DiskMB == 0 || !d.caps.Limits.Disk {
		return nil
	}
	if err := d.store.SetLimit(filepath.Join(st.Dir, upperDir), int64(st.Limits.DiskMB)<<20); err != nil {
		return fmt.Errorf("limit the sandbox's disk: %w", err)
	}
	return nil
}

// DiskUsage implements driver.DiskMeter.
func (d *Driver) DiskUsage(ctx context.Context, h driver.Handle) (driver.DiskUsage, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.DiskUsage{}, err
	}
	u, err := d.store.Usage(ctx, filepath.Join(st.Dir, upperDir))
	if err != nil {
		return driver.DiskUsage{}, err
	}
	return driver.DiskUsage{Bytes: u.Bytes, Limit: u.Limit, Method: string(u.Method)}, nil
}
