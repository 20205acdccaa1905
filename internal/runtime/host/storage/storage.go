// Package storage owns how sandbox filesystems are stored: it probes the
// filesystem that holds the data directory and says which backend hutch
// uses there (btrfs, xfs or overlay) and what that backend can do:
// instant snapshots, reflink copies, a disk quota per sandbox. What is
// missing is said in a sentence a person can act on, never silently.
//
// The Backend that Open picks from a probe does the work on a sandbox's
// writable layer: Make it, Copy it exactly (a snapshot, a restore, a
// fork: a btrfs subvolume snapshot, a reflink copy or a byte copy), Remove
// it, cap it (SetLimit, a btrfs qgroup limit) and measure it (Usage).
//
// Probing tries each ability for real in a scratch directory hutch owns (a
// reflink between two files, an overlay mount that is never attached to
// any mount table, a btrfs subvolume and its snapshot) and removes what it
// made. It reads quota state but never changes it: enabling btrfs qgroups
// or remounting with project quotas is the operator's decision, which the
// report names.
package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/layerfs"
)

// The words of the backend's contract live in layerfs, which the driver
// contract speaks too (driver.Storage); here they keep their names.
type (
	// Kind is a storage backend.
	Kind = layerfs.Kind
	// Snapshot is how a snapshot or fork copies a sandbox's files.
	Snapshot = layerfs.Snapshot
)

// The backends.
const (
	Btrfs   = layerfs.Btrfs
	XFS     = layerfs.XFS
	Overlay = layerfs.Overlay
	None    = layerfs.None
)

// How a snapshot or fork copies.
const (
	SnapshotSubvolume = layerfs.SnapshotSubvolume
	SnapshotReflink   = layerfs.SnapshotReflink
	SnapshotCopy      = layerfs.SnapshotCopy
)

// QuotaMechanism is how a disk quota per sandbox is enforced.
type QuotaMechanism string

const (
	// QuotaQgroup: a btrfs qgroup limit on the sandbox's subvolume.
	QuotaQgroup QuotaMechanism = "qgroup"
	// QuotaProject: an xfs or ext4 project quota on the sandbox's
	// directory tree.
	QuotaProject QuotaMechanism = "project"
	// QuotaNone: this filesystem (or this kernel) has no mechanism.
	QuotaNone QuotaMechanism = "none"
)

// Quota is the state of the disk quota mechanism on the filesystem.
type Quota struct {
	Mechanism QuotaMechanism
	// Enabled: a limit set now is enforced.
	Enabled bool
	// Hint says, when not Enabled, why and what an operator can do.
	Hint string
}

// Mount is the mount that holds the probed directory, from
// /proc/self/mountinfo.
type Mount struct {
	ID      int
	Point   string   // where it is mounted
	Type    string   // the filesystem type as mounted ("btrfs", "ext4", …)
	Source  string   // the device or source
	Options []string // the superblock's options ("prjquota", "noquota", …)
}

// Info is what Probe found.
type Info struct {
	// Dir is the probed directory.
	Dir string
	// Filesystem is the name of the filesystem holding Dir, from its
	// statfs magic ("btrfs", "xfs", "ext4", "tmpfs", "overlayfs", …), or
	// the magic in hex when it is not one hutch knows.
	Filesystem string
	Mount      Mount
	// Kind is the backend hutch uses here; None when none works.
	Kind Kind
	// Overlay: an overlay with its upper and work directories here
	// mounts (tried as root; assumed from Filesystem otherwise, with a
	// note).
	Overlay bool
	// Reflink: FICLONE between two files here works (tried).
	Reflink bool
	// Snapshot is the cheapest way to copy a sandbox's files here (tried).
	Snapshot Snapshot
	Quota    Quota
	// Degraded says what this backend lacks, for a person; empty when
	// nothing is missing.
	Degraded string
	// Notes are the details of each trial that failed or could not run,
	// for the log.
	Notes []string
}

// Probe finds what hutch can use on the filesystem holding dir (the data
// directory). It tries each ability in a fresh directory it makes inside
// scratch, a directory hutch owns on the same mount as dir, and removes
// everything it made before it returns. It never changes quota settings.
// An error means the probe itself could not run (dir unreadable, scratch
// on another mount, scratch not writable); what the filesystem lacks is
// in Info. An error removing the trial directory comes with the Info.
func Probe(dir, scratch string) (_ Info, retErr error) {
	info := Info{Dir: dir, Snapshot: SnapshotCopy, Quota: Quota{Mechanism: QuotaNone}}
	magic, err := fsMagic(dir)
	if err != nil {
		return Info{}, fmt.Errorf("storage probe: %w", err)
	}
	info.Filesystem = fsName(magic)
	info.Mount, err = mountOf(dir)
	if err != nil {
		return Info{}, fmt.Errorf("storage probe: %w", err)
	}
	if magic == ext4Magic && strings.HasPrefix(info.Mount.Type, "ext") {
		info.Filesystem = info.Mount.Type // ext2 and ext3 share ext4's magic
	}
	sm, err := mountOf(scratch)
	if err != nil {
		return Info{}, fmt.Errorf("storage probe: %w", err)
	}
	if sm.ID != info.Mount.ID {
		return Info{}, fmt.Errorf("storage probe: scratch directory %s is on mount %s, not on %s's (%s): %w",
			scratch, sm.Point, dir, info.Mount.Point, errdefs.ErrInvalid)
	}

	trial, err := os.MkdirTemp(scratch, ".storage-probe-")
	if err != nil {
		return Info{}, fmt.Errorf("storage probe: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(trial); err != nil && retErr == nil {
			retErr = fmt.Errorf("storage probe: removing its trial directory: %w", err)
		}
	}()

	note := func(format string, args ...any) { info.Notes = append(info.Notes, fmt.Sprintf(format, args...)) }

	if err := tryReflink(trial); err != nil {
		note("reflink: %v", err)
	} else {
		info.Reflink = true
		info.Snapshot = SnapshotReflink
	}

	switch err := tryOverlay(trial); {
	case err == nil:
		info.Overlay = true
	case errors.Is(err, errNotTried):
		info.Overlay = overlayUpperKnown[magic]
		if info.Overlay {
			note("overlay: %v; assumed to work on %s", err, info.Filesystem)
		} else {
			note("overlay: %v; assumed not to work on %s", err, info.Filesystem)
		}
	default:
		note("overlay: %v", err)
	}

	switch magic {
	case btrfsMagic:
		if err := trySubvolumeSnapshot(trial); err != nil {
			note("btrfs subvolume snapshot: %v", err)
			// Qgroups limit subvolumes; without them there is nothing
			// to limit.
			info.Quota.Hint = "qgroups limit subvolumes, which could not be made here"
			break
		}
		info.Kind = Btrfs
		info.Snapshot = SnapshotSubvolume
		info.Quota = btrfsQuota(dir, info.Mount.Point)
	case xfsMagic:
		if info.Reflink {
			info.Kind = XFS
		} else {
			note("xfs: no reflink, so no xfs backend (mkfs.xfs -m reflink=1 makes a filesystem with it)")
		}
		info.Quota = projectQuota(info.Mount, xfsKernelQuota())
	case ext4Magic:
		info.Quota = projectQuota(info.Mount, nil)
	default:
		info.Quota.Hint = info.Filesystem + " has no per-directory quota hutch can use"
	}
	if info.Kind == None && info.Overlay {
		info.Kind = Overlay
	}
	info.Degraded = degraded(info)
	return info, nil
}

// String is a line for hutch serve's first output, such as
// "btrfs (snapshots: subvolume, quota: qgroup)" or "overlay on ext4
// (snapshots: copy, quota: project, off): overlay on ext4: no instant
// snapshots, no disk quota (…)".
func (i Info) String() string {
	kind := string(i.Kind)
	if i.Kind == None {
		kind = "none"
	}
	if kind != i.Filesystem {
		kind += " on " + i.Filesystem
	}
	quota := string(i.Quota.Mechanism)
	if i.Quota.Mechanism != QuotaNone && !i.Quota.Enabled {
		quota += ", off"
	}
	s := fmt.Sprintf("%s (snapshots: %s, quota: %s)", kind, i.Snapshot, quota)
	if i.Degraded != "" {
		s += ": " + i.Degraded
	}
	return s
}

// degraded is the sentence that says what info's backend lacks.
func degraded(info Info) string {
	if info.Kind == None {
		why := "the kernel refuses an overlay upper layer on it"
		for _, n := range info.Notes {
			if after, ok := strings.CutPrefix(n, "overlay: "); ok {
				why = after
			}
		}
		return fmt.Sprintf("no storage backend works on %s: %s", info.Filesystem, why)
	}
	var missing []string
	if info.Snapshot == SnapshotCopy {
		missing = append(missing, "no instant snapshots")
	}
	if !info.Quota.Enabled {
		missing = append(missing, "no disk quota")
	}
	if len(missing) == 0 {
		return ""
	}
	s := string(info.Kind)
	if s != info.Filesystem {
		s += " on " + info.Filesystem
	}
	s += ": " + strings.Join(missing, ", ")
	if !info.Quota.Enabled && info.Quota.Hint != "" {
		s += " (" + info.Quota.Hint + ")"
	}
	return s
}

// errNotTried marks a trial that could not run here (no privilege, an old
// kernel), as opposed to one the filesystem refused.
var errNotTried = errors.New("not tried")
