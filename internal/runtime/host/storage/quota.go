package storage

import (
	"errors"
	"fmt"
	"os"
)

// projectQuota reads the project quota state of an xfs or ext4 mount from
// its superblock options: "prjquota" (xfs also says "pquota") when
// accounted and enforced, "pqnoenforce" when only accounted. noKernel, when
// not nil, says why this kernel cannot have them at all.
func projectQuota(m Mount, noKernel error) Quota {
	q := Quota{Mechanism: QuotaProject}
	switch {
	case m.hasOption("prjquota", "pquota", "prjquota=on"):
		q.Enabled = true
	case m.hasOption("pqnoenforce"):
		q.Hint = fmt.Sprintf("%s is mounted with pqnoenforce: project usage is counted but limits are not enforced; remount with -o prjquota", m.Point)
	case noKernel != nil:
		q.Mechanism = QuotaNone
		q.Hint = noKernel.Error()
	case m.Type == "ext4":
		q.Hint = fmt.Sprintf("%s is not mounted with prjquota, which on ext4 needs the quota and project features first: `tune2fs -O quota,project`", m.Point)
	default:
		q.Hint = fmt.Sprintf("%s is not mounted with prjquota; project quotas are switched on at mount time", m.Point)
	}
	return q
}

// xfsKernelQuota says whether this kernel was built with XFS quota
// support (CONFIG_XFS_QUOTA): without it, /proc/fs/xfs/xqm is absent and
// an xfs mount with -o prjquota fails ("quota support not available in
// this kernel"). nil when it was, or when /proc/fs/xfs cannot tell.
func xfsKernelQuota() error {
	if _, err := os.Stat("/proc/fs/xfs/stat"); err != nil {
		return nil // no procfs view of xfs: cannot tell
	}
	if _, err := os.Stat("/proc/fs/xfs/xqm"); errors.Is(err, os.ErrNotExist) {
		return errors.New("this kernel has no XFS quota support (built without CONFIG_XFS_QUOTA)")
	}
	return nil
}
