package fake

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Disk is the fake driver that also measures its sandboxes' files, as a
// driver on a filesystem without quotas does (driver.DiskMeter, without
// Capabilities.Limits.Disk): each measures what SetDisk last set (0
// before).
type Disk struct{ *Driver }

var _ driver.DiskMeter = Disk{}

// OpDisk is DiskUsage, for Hook and Calls.
const OpDisk Op = "disk"

// diskFile holds, in a sandbox's directory, what its DiskUsage reports.
const diskFile = "disk"

// SetDisk sets what a Disk driver measures of sandbox id's files from
// now on.
func (d *Driver) SetDisk(id string, bytes int64) error {
	return os.WriteFile(filepath.Join(d.cfg.Dir, id, diskFile), []byte(strconv.FormatInt(bytes, 10)), 0o600)
}

// DiskUsage implements driver.DiskMeter: what SetDisk last set, walked.
func (d Disk) DiskUsage(ctx context.Context, h driver.Handle) (driver.DiskUsage, error) {
	s, id, err := d.decode(h)
	if err != nil {
		return driver.DiskUsage{}, err
	}
	if err := d.enter(ctx, OpDisk, id); err != nil {
		return driver.DiskUsage{}, err
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir, diskFile))
	if errors.Is(err, fs.ErrNotExist) {
		return driver.DiskUsage{Method: "walk"}, nil
	}
	if err != nil {
		return driver.DiskUsage{}, err
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return driver.DiskUsage{Bytes: n, Method: "walk"}, err
}
