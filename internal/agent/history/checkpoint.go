package history

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Checkpoint records the tree open as tree (a directory, O_PATH will do;
// its Name is how messages name it) as a new checkpoint of kind with
// message, then applies retention. Files unchanged since the newest
// checkpoint are not read again.
func (s *Store) Checkpoint(ctx context.Context, tree *os.File, kind, message string) (Checkpoint, error) {
	if err := validKind(kind); err != nil {
		return Checkpoint{}, err
	}
	if len(message) > MaxMessageBytes {
		return Checkpoint{}, errdefs.Invalid("invalid_parameter", "the message is longer than %d bytes", MaxMessageBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, err := s.checkpoint(ctx, tree, kind, message)
	if err != nil {
		return Checkpoint{}, err
	}
	return cp, s.retain()
}

func (s *Store) checkpoint(ctx context.Context, tree *os.File, kind, message string) (_ Checkpoint, retErr error) {
	sc, err := s.scanTree(ctx, tree, true, s.last)
	if err != nil {
		return Checkpoint{}, err
	}
	defer func() {
		if retErr != nil {
			s.dropNew(sc.newBlobs)
		}
	}()
	m := &manifest{
		header: header{
			Version: manifestVersion,
			Checkpoint: Checkpoint{
				ID:        s.nextID(),
				CreatedAt: s.now().UTC(),
				Message:   message,
				Kind:      kind,
				Files:     sc.files,
				Entries:   len(sc.entries),
				Bytes:     sc.bytes,
				Skipped:   sc.skipped,
			},
			Excludes: s.opts.Excludes,
		},
		entries: sc.entries,
	}
	if s.last != nil {
		m.Parent = s.last.ID
	}
	if len(sc.newBlobs) > 0 {
		// The blobs reach the disk before the manifest that names them.
		if err := s.syncfs(); err != nil {
			return Checkpoint{}, err
		}
	}
	if err := s.writeManifest(m); err != nil {
		return Checkpoint{}, err
	}
	s.addRefs(m)
	s.metas = append(s.metas, m.Checkpoint)
	s.last = m
	return m.Checkpoint, nil
}

func (s *Store) syncfs() error {
	fd, err := unix.Open(s.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return storeError(err)
	}
	defer unix.Close(fd)
	return storeError(unix.Syncfs(fd))
}

// retain drops the oldest checkpoints beyond Keep, then while the blobs
// are over MaxBytes, never the newest, and removes the blobs no
// checkpoint left names. The manifest goes first: a crash in between
// leaves blobs that Open collects.
func (s *Store) retain() error {
	for len(s.metas) > 1 && (len(s.metas) > s.opts.Keep || s.bytes > s.opts.MaxBytes) {
		old := s.metas[0]
		m, readErr := s.readManifest(old.ID)
		if err := os.Remove(s.manifestPath(old.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return storeError(err)
		}
		s.metas = s.metas[1:]
		if readErr == nil {
			s.dropRefs(m)
		}
		// An unreadable manifest's blobs stay counted until Open
		// recounts.
	}
	return nil
}

// Change is how one path differs between two states of the tree.
type Change struct {
	// Path is relative to the tree, "." for the tree itself.
	Path string `json:"path"`
	// Change is ChangeAdded, ChangeModified or ChangeDeleted.
	Change string `json:"change"`
	// Type is the entry's type: the newer state's, or, deleted, the
	// older's.
	Type string `json:"type"`
}

// Changes.
const (
	ChangeAdded    = "added"
	ChangeModified = "modified"
	ChangeDeleted  = "deleted"
)

// Diff lists how the tree changed from checkpoint from to checkpoint to,
// or, with to empty, to the tree as it is now (open as tree), sorted by
// path. A change of content, type, mode, owner or symlink target is a
// modification; a change of mtime alone is not.
func (s *Store) Diff(ctx context.Context, tree *os.File, from, to string) ([]Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fm, err := s.manifestOf(from)
	if err != nil {
		return nil, err
	}
	if to != "" {
		tm, err := s.manifestOf(to)
		if err != nil {
			return nil, err
		}
		return diffEntries(fm.entries, tm.entries), nil
	}
	sc, err := s.scanTree(ctx, tree, false, fm, s.last)
	if err != nil {
		return nil, err
	}
	return diffEntries(fm.entries, sc.entries), nil
}

// diffEntries compares two manifests' entries.
func diffEntries(from, to []Entry) []Change {
	a := make(map[string]*Entry, len(from))
	for i := range from {
		a[from[i].Path] = &from[i]
	}
	var out []Change
	for i := range to {
		e := &to[i]
		old, ok := a[e.Path]
		switch {
		case !ok:
			out = append(out, Change{Path: e.Path, Change: ChangeAdded, Type: e.Type})
		case modified(old, e):
			out = append(out, Change{Path: e.Path, Change: ChangeModified, Type: e.Type})
		}
		delete(a, e.Path)
	}
	for p, e := range a {
		out = append(out, Change{Path: p, Change: ChangeDeleted, Type: e.Type})
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func modified(a, b *Entry) bool {
	return a.Type != b.Type || a.Mode != b.Mode || a.UID != b.UID || a.GID != b.GID ||
		a.SHA256 != b.SHA256 || a.Target != b.Target
}
