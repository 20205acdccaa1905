// Package history owns the file history of one directory tree: checkpoints
// of every file, directory and symlink in it, kept as content-addressed
// blobs and one manifest per checkpoint, restored exactly (deletions,
// binary files, modes, owners and times included), compared, and bounded
// by a retention policy. It is a filesystem engine with no HTTP and no
// dependency on git; the agent serves it (internal/agent/files/history.go).
//
// Lifecycle: Open a Store on a directory only its owner may write (it is
// created 0700 when missing; what a crash left half-written is cleaned),
// then call its methods with the tracked tree opened by the caller as a
// directory descriptor, so the caller decides how the tree's path is
// resolved. One operation runs at a time per Store; a Store needs no Close.
//
// Layout of a store directory:
//
//	blobs/<2 hex>/<sha256>   file contents, written once (temp + rename)
//	checkpoints/<id>.json    one manifest per checkpoint: a header line,
//	                         then one JSON line per entry, sorted by path
//	tmp/                     what is being written; emptied by Open
//
// A checkpoint exists once its manifest is renamed into checkpoints/,
// after its blobs reached the disk (syncfs); blobs no manifest names are
// removed by retention and by Open.
package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Kinds of checkpoint. A caller may name others (see validKind).
const (
	KindTask    = "task"
	KindManual  = "manual"
	KindPreUndo = "pre-undo"
)

// Defaults of Options' zero values.
const (
	DefaultMaxEntries   = 200_000
	DefaultMaxFileBytes = 256 << 20
	DefaultMaxBytes     = 1 << 30
	DefaultKeep         = 100
	// MaxMessageBytes bounds a checkpoint's message.
	MaxMessageBytes = 4 << 10
	// maxSkipped bounds how many skipped entries a checkpoint lists.
	maxSkipped = 100
)

// DefaultExcludes are the names of directories a checkpoint skips wherever
// they are: dependencies and caches that are rebuilt, not edited.
var DefaultExcludes = []string{"node_modules", ".venv", "__pycache__", ".cache"}

// Options bound and shape a store; zero values take the defaults.
type Options struct {
	// Excludes are names of directories skipped wherever they are in the
	// tree; a restore leaves them as they are. nil means DefaultExcludes;
	// an empty non-nil list excludes nothing.
	Excludes []string
	// SkipDirs are directories (paths as this process sees them) skipped
	// wherever they appear in a tree, found by device and inode; the
	// store's own directory always is.
	SkipDirs []string
	// MaxEntries bounds the entries (files, directories, symlinks) of one
	// checkpoint.
	MaxEntries int
	// MaxFileBytes bounds one file: a checkpoint of a tree holding a
	// larger file fails, naming it (exclude it or raise the bound), rather
	// than leave it out and have a restore delete it.
	MaxFileBytes int64
	// MaxBytes is the budget of the store's unique blobs: retention drops
	// the oldest checkpoints until they fit, and a checkpoint whose own
	// files cannot fit fails.
	MaxBytes int64
	// Keep is how many checkpoints retention keeps at most.
	Keep int
}

func (o *Options) setDefaults() error {
	if o.Excludes == nil {
		o.Excludes = DefaultExcludes
	}
	o.Excludes = slices.Clone(o.Excludes)
	o.SkipDirs = slices.Clone(o.SkipDirs)
	for _, e := range o.Excludes {
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, "/\x00") {
			return fmt.Errorf("history: exclude %q is not a directory name", e)
		}
	}
	if o.MaxEntries < 0 || o.MaxFileBytes < 0 || o.MaxBytes < 0 || o.Keep < 0 {
		return errors.New("history: bounds must not be negative")
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	return nil
}

// Checkpoint describes one checkpoint.
type Checkpoint struct {
	// ID is a sequence number, fixed width so it sorts as it counts: the
	// newest checkpoint has the largest, whatever the clock did.
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Message   string    `json:"message,omitempty"`
	Kind      string    `json:"kind"`
	// Files counts regular files, Entries everything recorded (files,
	// directories, symlinks, the tree itself); Bytes is the sum of the
	// files' sizes.
	Files   int   `json:"files"`
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Parent is the newest checkpoint when this one was taken.
	Parent string `json:"parent,omitempty"`
	// Skipped are entries left out (devices, FIFOs, sockets, mount
	// points), the first maxSkipped of them.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Skipped is an entry a checkpoint left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Store is the history of one tree.
type Store struct {
	dir  string
	opts Options

	mu    sync.Mutex
	metas []Checkpoint // oldest first
	last  *manifest    // the newest checkpoint's, nil when there is none
	blobs map[string]int64
	refs  map[string]int // checkpoints naming each blob
	bytes int64          // sum of blobs

	// racy is how recent a file's change may be for its hash to be
	// trusted again without reading it (see scan.file).
	racy time.Duration
	// hashed counts the bytes read to hash files, for tests.
	hashed atomic.Int64
	now    func() time.Time
}

// Open opens the store in dir, creating it (0700) when missing, and cleans
// what a crash left: temporary files and blobs no manifest names.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("history: create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("history: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "tmp")); err != nil {
		return nil, fmt.Errorf("history: clean temporary files: %w", err)
	}
	for _, d := range []string{"blobs", "checkpoints", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	s := &Store{
		dir:   dir,
		opts:  opts,
		blobs: map[string]int64{},
		refs:  map[string]int{},
		racy:  time.Second,
		now:   time.Now,
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// load reads every manifest's header and blob references, then removes
// the blobs none names.
func (s *Store) load() error {
	ids, err := s.manifestIDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := s.readManifest(id)
		if err != nil {
			// A manifest that does not read is no checkpoint; it stays
			// for a human, under a name no id matches.
			os.Rename(s.manifestPath(id), s.manifestPath(id)+".damaged")
			continue
		}
		s.addRefs(m)
		s.metas = append(s.metas, m.Checkpoint)
		s.last = m
	}
	if err := s.scanBlobs(); err != nil {
		return err
	}
	for sum := range s.blobs {
		if s.refs[sum] == 0 {
			s.removeBlob(sum)
		}
	}
	return nil
}

// isID says whether s is a checkpoint's id: 8 decimal digits. (Not a
// regexp: one compiled at init was 2 % of every agent's start.)
func isID(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// manifestIDs lists the checkpoints on disk, oldest first.
func (s *Store) manifestIDs() ([]string, error) {
	des, err := os.ReadDir(filepath.Join(s.dir, "checkpoints"))
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var ids []string
	for _, de := range des {
		name := de.Name()
		if id, ok := strings.CutSuffix(name, ".json"); ok && isID(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *Store) manifestPath(id string) string {
	return filepath.Join(s.dir, "checkpoints", id+".json")
}

// nextID is one more than the newest checkpoint's. Retention never
// removes the newest, so an id is never given twice.
func (s *Store) nextID() string {
	n := 1
	if len(s.metas) > 0 {
		last, _ := strconv.Atoi(s.metas[len(s.metas)-1].ID)
		n = last + 1
	}
	return fmt.Sprintf("%08d", n)
}

// List returns the checkpoints, newest first.
func (s *Store) List() []Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.metas)
	slices.Reverse(out)
	return out
}

// Select returns the checkpoint id names or, with id empty, the steps-th
// back from the newest (1 is the newest).
func (s *Store) Select(id string, steps int) (Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.selectLocked(id, steps)
}

func (s *Store) selectLocked(id string, steps int) (Checkpoint, error) {
	switch {
	case id != "" && steps != 0:
		return Checkpoint{}, errdefs.Invalid("invalid_parameter", "name a checkpoint by id or by steps, not both")
	case id != "":
		for _, m := range s.metas {
			if m.ID == id {
				return m, nil
			}
		}
		return Checkpoint{}, errdefs.NotFound("checkpoint_not_found", "there is no checkpoint %q", id)
	case steps < 1:
		return Checkpoint{}, errdefs.Invalid("invalid_parameter", "steps must be 1 (the newest checkpoint) or more")
	case steps > len(s.metas):
		return Checkpoint{}, errdefs.NotFound("checkpoint_not_found", "there are %d checkpoints, not %d", len(s.metas), steps)
	}
	return s.metas[len(s.metas)-steps], nil
}

// manifestOf reads checkpoint id's manifest (the newest from memory).
func (s *Store) manifestOf(id string) (*manifest, error) {
	if _, err := s.selectLocked(id, 0); err != nil {
		return nil, err
	}
	if s.last != nil && s.last.ID == id {
		return s.last, nil
	}
	return s.readManifest(id)
}

// isKind says whether s is 1 to 32 of [a-z0-9._-], the first a letter or
// digit.
func isKind(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func validKind(kind string) error {
	if !isKind(kind) {
		return errdefs.Invalid("invalid_parameter", "kind %q is not 1 to 32 lowercase letters, digits, '.', '_' or '-'", kind)
	}
	return nil
}

// checkCtx fails early when the caller's context is done.
func checkCtx(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, "canceled", err, "the operation was canceled")
	}
	return nil
}
