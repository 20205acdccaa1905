package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// manifestVersion is the format of the manifests this build writes and
// reads.
const manifestVersion = 1

// Entry is one path of a checkpoint.
type Entry struct {
	// Path is relative to the tree, "." for the tree itself.
	Path string `json:"path"`
	Type string `json:"type"`
	// Mode is the permission bits with setuid, setgid and sticky.
	Mode uint32 `json:"mode"`
	UID  uint32 `json:"uid"`
	GID  uint32 `json:"gid"`
	// Size and SHA256 are a file's; Target is a symlink's.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
	// Mtime is in nanoseconds since the epoch.
	Mtime int64 `json:"mtime"`
	// Ino and Ctime (ns) are what a later checkpoint compares, with Size
	// and Mtime, to reuse a file's hash without reading it; Ctime zero
	// means the hash must not be reused (the file changed too close to
	// the moment it was read).
	Ino   uint64 `json:"ino,omitempty"`
	Ctime int64  `json:"ctime,omitempty"`
}

// header is a manifest's first line.
type header struct {
	Version int `json:"version"`
	Checkpoint
	// Excludes are the names of the directories this checkpoint skipped;
	// a restore to it leaves them alone too.
	Excludes []string `json:"excludes,omitempty"`
}

// manifest is a checkpoint and its entries: the tree itself ("."), then
// the rest sorted by path (so a directory comes before what it holds).
type manifest struct {
	header
	entries []Entry
	byPath  map[string]*Entry
}

// index maps each path of m to its entry.
func (m *manifest) index() map[string]*Entry {
	if m.byPath == nil {
		m.byPath = make(map[string]*Entry, len(m.entries))
		for i := range m.entries {
			m.byPath[m.entries[i].Path] = &m.entries[i]
		}
	}
	return m.byPath
}

// blobSums lists each blob m names, once.
func (m *manifest) blobSums() map[string]int64 {
	sums := map[string]int64{}
	for _, e := range m.entries {
		if e.Type == TypeFile {
			sums[e.SHA256] = e.Size
		}
	}
	return sums
}

// readManifest reads and checks checkpoint id's manifest.
func (s *Store) readManifest(id string) (*manifest, error) {
	f, err := os.Open(s.manifestPath(id))
	if err != nil {
		return nil, fmt.Errorf("history: read checkpoint %s: %w", id, err)
	}
	defer f.Close()
	m, err := decodeManifest(f, s.opts.MaxEntries)
	if err != nil {
		return nil, fmt.Errorf("history: checkpoint %s: %w", id, err)
	}
	if m.ID != id {
		return nil, fmt.Errorf("history: checkpoint %s names itself %q", id, m.ID)
	}
	return m, nil
}

// decodeManifest reads a manifest of at most maxEntries entries and checks
// everything a restore relies on: each path clean and relative, below a
// directory listed before it, once; each type known, each blob a SHA-256.
// What is on disk may have been changed by someone else, so it is
// untrusted.
func decodeManifest(r io.Reader, maxEntries int) (*manifest, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	m := &manifest{}
	if err := dec.Decode(&m.header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("manifest version %d, want %d", m.Version, manifestVersion)
	}
	if !isID(m.ID) {
		return nil, fmt.Errorf("invalid id %q", m.ID)
	}
	dirs := map[string]bool{}
	files, entries, bytes := 0, 0, int64(0)
	for {
		var e Entry
		err := dec.Decode(&e)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(m.entries), err)
		}
		if len(m.entries) == maxEntries {
			return nil, fmt.Errorf("more than %d entries", maxEntries)
		}
		if err := checkEntry(&e, dirs, m.entries); err != nil {
			return nil, err
		}
		if e.Type == TypeDir {
			dirs[e.Path] = true
		}
		if e.Type == TypeFile {
			files++
			bytes += e.Size
		}
		entries++
		m.entries = append(m.entries, e)
	}
	if len(m.entries) == 0 {
		return nil, errors.New("no entries")
	}
	if files != m.Files || entries != m.Entries || bytes != m.Bytes {
		return nil, errors.New("the header's counts do not match the entries")
	}
	return m, nil
}

func checkEntry(e *Entry, dirs map[string]bool, before []Entry) error {
	switch {
	case len(before) == 0:
		if e.Path != "." || e.Type != TypeDir {
			return fmt.Errorf("the first entry is %q (%s), not the tree itself", e.Path, e.Type)
		}
	case !validRel(e.Path):
		return fmt.Errorf("invalid path %q", e.Path)
	case len(before) > 1 && e.Path <= before[len(before)-1].Path:
		return fmt.Errorf("path %q is out of order", e.Path)
	case !dirs[path.Dir(e.Path)]:
		return fmt.Errorf("path %q is not below a directory of the checkpoint", e.Path)
	}
	if e.Mode&^0o7777 != 0 {
		return fmt.Errorf("%s: invalid mode %o", e.Path, e.Mode)
	}
	switch e.Type {
	case TypeDir:
		if e.Size != 0 || e.SHA256 != "" || e.Target != "" {
			return fmt.Errorf("%s: a directory with content", e.Path)
		}
	case TypeFile:
		if e.Size < 0 || !validSum(e.SHA256) || e.Target != "" {
			return fmt.Errorf("%s: invalid file entry", e.Path)
		}
	case TypeSymlink:
		if e.Target == "" || strings.IndexByte(e.Target, 0) >= 0 || len(e.Target) >= unix.PathMax || e.SHA256 != "" {
			return fmt.Errorf("%s: invalid symlink entry", e.Path)
		}
	default:
		return fmt.Errorf("%s: unknown type %q", e.Path, e.Type)
	}
	return nil
}

// validRel reports whether p is a clean relative path below the tree.
func validRel(p string) bool {
	if p == "" || p == "." || path.Clean(p) != p || path.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." || len(c) > 255 {
			return false
		}
	}
	return true
}

func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// writeManifest writes m to a temporary file, flushes it to the disk and
// renames it into place: only then does the checkpoint exist.
func (s *Store) writeManifest(m *manifest) (retErr error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "manifest-")
	if err != nil {
		return storeError(err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(w)
	if err := enc.Encode(&m.header); err != nil {
		return err
	}
	for i := range m.entries {
		if err := enc.Encode(&m.entries[i]); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return storeError(err)
	}
	if err := f.Sync(); err != nil {
		return storeError(err)
	}
	if err := f.Close(); err != nil {
		return storeError(err)
	}
	if err := os.Rename(f.Name(), s.manifestPath(m.ID)); err != nil {
		return storeError(err)
	}
	return syncDir(filepath.Join(s.dir, "checkpoints"))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return storeError(err)
	}
	defer d.Close()
	return storeError(d.Sync())
}
