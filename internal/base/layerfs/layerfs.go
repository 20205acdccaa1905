// Package layerfs is the vocabulary of how sandboxes' writable layers are
// kept on the data directory's filesystem: which backend keeps them, how
// a copy of one was made, how the bytes one holds were measured. The
// storage backend (internal/runtime/host/storage) speaks it, and so does
// the driver contract (driver.Storage), which says what a driver asks of
// that backend without importing it.
package layerfs

// Kind is a storage backend.
type Kind string

const (
	// Btrfs: a subvolume per sandbox layer; snapshots and forks are
	// subvolume snapshots; qgroups are the disk quota.
	Btrfs Kind = "btrfs"
	// XFS: an overlay whose layers are copied with reflinks; project
	// quotas are the disk quota.
	XFS Kind = "xfs"
	// Overlay: an overlay upper directory per sandbox on any filesystem
	// that takes one; snapshots are copies.
	Overlay Kind = "overlay"
	// None: no backend works on this filesystem (the kernel refuses an
	// overlay upper layer on it and it is neither btrfs nor xfs).
	None Kind = ""
)

// Snapshot is how a snapshot or fork copies a sandbox's files.
type Snapshot string

const (
	// SnapshotSubvolume: a btrfs subvolume snapshot, constant time
	// whatever the size.
	SnapshotSubvolume Snapshot = "subvolume"
	// SnapshotReflink: each file is a reflink (FICLONE) copy sharing its
	// extents: time grows with the number of files, not their size.
	SnapshotReflink Snapshot = "reflink"
	// SnapshotCopy: each file's bytes are copied.
	SnapshotCopy Snapshot = "copy"
)

// CopyStats says what a copy of a layer did.
type CopyStats struct {
	// Method is how the files were copied: SnapshotSubvolume,
	// SnapshotReflink or SnapshotCopy.
	Method Snapshot
	// Files are the entries copied that are not directories, each name
	// of a hard link counted; Dirs the directories below the root. A
	// subvolume snapshot does not walk the tree: both are 0.
	Files, Dirs int64
	// Bytes is the apparent size of the regular files copied, each inode
	// once; 0 for a subvolume snapshot.
	Bytes int64
	// ByteCopied counts the regular files of a reflink copy that the
	// filesystem would not reflink (a file of another filesystem, a
	// btrfs nodatacow file) and that were copied byte by byte instead.
	ByteCopied int64
	// Mounts counts the mount points under src, which are copied as
	// empty directories, never crossed (as cp -x does).
	Mounts int64
}

// UsageMethod is how a Usage was measured.
type UsageMethod string

const (
	// UsageQgroup: the referenced bytes of the subvolume's qgroup.
	UsageQgroup UsageMethod = "qgroup"
	// UsageWalk: a walk of the tree summing the blocks allocated to each
	// inode (st_blocks × 512), hard links once, other mounts not entered.
	UsageWalk UsageMethod = "walk"
)

// Usage is what a directory holds.
type Usage struct {
	Bytes  int64
	Method UsageMethod
	// Limit is the cap in force (a qgroup's max_rfer); 0 when there is
	// none or the method cannot tell.
	Limit int64
}
