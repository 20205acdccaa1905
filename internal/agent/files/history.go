package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/history"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/osthread"
)

// The file history of directories in the sandbox (agentproto.FeatureHistory):
//
//	POST /history/checkpoints      {dir, message, kind} → 201 Checkpoint
//	GET  /history/checkpoints?dir= → {checkpoints}, newest first
//	POST /history/restore          {dir, id} or {dir, steps} → {restored, pre_undo, changes}
//	GET  /history/diff?dir=&from=[&to=] → {changes}; to defaults to the directory as it is
//
// Each tracked directory has its own store (internal/agent/history) under
// Config.HistoryDir, named by a hash of the directory's path, opened on
// first use and kept open; a store serialises its operations. The tracked
// directory is resolved inside the sandbox root like every path of the
// file API and handed to the store as a descriptor.

// historyDefaultDir is where the stores live, below Root, when
// Config.HistoryDir is empty: at the top of the sandbox's tree, which is
// its root's whatever the image (an image's /var or /var/lib may belong
// to an id the sandbox does not map, as the host template's does).
const historyDefaultDir = ".hutch-history"

// historyStores are the stores of the tracked directories.
type historyStores struct {
	dir  string // Config.HistoryDir, or its default
	opts history.Options

	mu     sync.Mutex
	stores map[string]*history.Store // by tracked directory
}

func newHistoryStores(cfg Config) *historyStores {
	dir := cfg.HistoryDir
	if dir == "" {
		dir = path.Join(cfg.Root.path, historyDefaultDir)
	}
	return &historyStores{
		dir:    dir,
		opts:   history.Options{SkipDirs: []string{dir}},
		stores: map[string]*history.Store{},
	}
}

// get returns the store of the tracked directory dir (a clean sandbox
// path), opening it; with create false, a directory never checkpointed
// has none: nil.
func (h *historyStores) get(dir string, create bool) (*history.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.stores[dir]; ok {
		return st, nil
	}
	sum := sha256.Sum256([]byte(dir))
	p := filepath.Join(h.dir, hex.EncodeToString(sum[:16]))
	if !create {
		if _, err := os.Stat(filepath.Join(p, "checkpoints")); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	// The stores' directory is the agent's alone: the sandbox's user
	// does not even learn which directories are tracked.
	if err := os.MkdirAll(filepath.Dir(h.dir), 0o755); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if err := os.Mkdir(h.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("history: %w", err)
	}
	st, err := history.Open(p, h.opts)
	if err != nil {
		return nil, err
	}
	h.stores[dir] = st
	return st, nil
}

// asAgent runs fn with the agent's own file-system ids. The agent
// touches files as the sandbox's user (cmd/hutch-agent's fileUser, which
// also drops the file-system capabilities), but the history stores must
// be beyond that user's reach, and a restore must set owners: so, when
// the agent is root, fn runs on an OS thread of its own whose fsuid and
// fsgid are 0 again (the kernel gives back the file-system capabilities
// with them), which is then thrown away. fn must not start goroutines
// that touch files: they would run on other threads, as the user.
func asAgent(fn func() error) error {
	if os.Getuid() != 0 {
		return fn() // the process driver: the agent is the sandbox's user
	}
	return osthread.Discarded(func() error {
		_, _ = unix.SetfsgidRetGid(0)
		_, _ = unix.SetfsuidRetUid(0)
		// Both report only the previous id: asking again tells whether
		// the change took.
		uid, _ := unix.SetfsuidRetUid(0)
		gid, _ := unix.SetfsgidRetGid(0)
		if uid != 0 || gid != 0 {
			return fmt.Errorf("history: could not take back the agent's file-system ids (they are %d:%d)", uid, gid)
		}
		return fn()
	})
}

// historyDir resolves the tracked directory a request names: an absolute
// path inside the root, outside the stores.
func (s *Service) historyDir(raw string) (Path, error) {
	if !path.IsAbs(raw) {
		return Path{}, errdefs.Invalid("invalid_parameter", "dir must be an absolute path, not %q", raw)
	}
	p, err := s.root.Resolve(raw)
	if err != nil {
		return Path{}, err
	}
	// A directory above the stores may be tracked: its walks skip them.
	if hd := s.history.dir; p.Abs == hd || strings.HasPrefix(p.Abs, hd+"/") {
		return Path{}, errdefs.Invalid("invalid_parameter", "%s is inside the file history's own directory", p.Abs)
	}
	return p, nil
}

// openTree opens the tracked directory p inside the root (O_PATH): what
// the store walks beneath. With create, a missing directory is made.
func (s *Service) openTree(p Path, create bool) (*os.File, error) {
	// No link on the way: the store's work runs with the agent's own file
	// ids (asAgent), and the sandbox's user must not point it elsewhere.
	fd, err := s.root.openNoLinks(p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == unix.ENOENT && create {
		if _, err := s.root.mkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		fd, err = s.root.openNoLinks(p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return nil, Classify(err, p.Abs)
	}
	return os.NewFile(uintptr(fd), p.Abs), nil
}

// noHistory is the answer about a directory never checkpointed.
func noHistory(dir string) error {
	return errdefs.NotFound("checkpoint_not_found", "%s has no checkpoints", dir)
}

// handleCheckpoint answers POST /history/checkpoints.
func (s *Service) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	var req agentproto.CheckpointRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var cp agentproto.Checkpoint
	err := asAgent(func() (err error) { cp, err = s.checkpoint(r, req); return err })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusCreated, cp)
}

func (s *Service) checkpoint(r *http.Request, req agentproto.CheckpointRequest) (agentproto.Checkpoint, error) {
	if req.Kind == "" {
		req.Kind = agentproto.CheckpointManual
	}
	p, err := s.historyDir(req.Dir)
	if err != nil {
		return agentproto.Checkpoint{}, err
	}
	tree, err := s.openTree(p, false)
	if err != nil {
		return agentproto.Checkpoint{}, err
	}
	defer tree.Close()
	st, err := s.history.get(p.Abs, true)
	if err != nil {
		return agentproto.Checkpoint{}, err
	}
	cp, err := st.Checkpoint(r.Context(), tree, req.Kind, req.Message)
	return wireCheckpoint(cp), err
}

// handleListCheckpoints answers GET /history/checkpoints?dir=.
func (s *Service) handleListCheckpoints(w http.ResponseWriter, r *http.Request) {
	p, err := s.historyDir(r.URL.Query().Get("dir"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var st *history.Store
	if err := asAgent(func() (err error) { st, err = s.history.get(p.Abs, false); return err }); err != nil {
		s.writeError(w, r, err)
		return
	}
	out := agentproto.CheckpointList{Checkpoints: []agentproto.Checkpoint{}}
	if st != nil {
		for _, cp := range st.List() {
			out.Checkpoints = append(out.Checkpoints, wireCheckpoint(cp))
		}
	}
	httpio.WriteJSON(w, http.StatusOK, out)
}

// handleRestore answers POST /history/restore. The writes, once begun,
// run to the end whatever becomes of the request (see history.Restore).
func (s *Service) handleRestore(w http.ResponseWriter, r *http.Request) {
	var req agentproto.RestoreRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	var res agentproto.RestoreResult
	err := asAgent(func() (err error) { res, err = s.restore(r, req); return err })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, res)
}

func (s *Service) restore(r *http.Request, req agentproto.RestoreRequest) (agentproto.RestoreResult, error) {
	p, err := s.historyDir(req.Dir)
	if err != nil {
		return agentproto.RestoreResult{}, err
	}
	st, err := s.history.get(p.Abs, false)
	if err != nil {
		return agentproto.RestoreResult{}, err
	}
	if st == nil {
		return agentproto.RestoreResult{}, noHistory(p.Abs)
	}
	// Refuse an unknown checkpoint before making a directory that went.
	if _, err := st.Select(req.ID, req.Steps); err != nil {
		return agentproto.RestoreResult{}, err
	}
	tree, err := s.openTree(p, true)
	if err != nil {
		return agentproto.RestoreResult{}, err
	}
	defer tree.Close()
	res, err := st.Restore(r.Context(), tree, req.ID, req.Steps)
	if err != nil {
		return agentproto.RestoreResult{}, err
	}
	return agentproto.RestoreResult{
		Restored: wireCheckpoint(res.Restored),
		PreUndo:  wireCheckpoint(res.PreUndo),
		Changes:  wireChanges(res.Changes),
	}, nil
}

// handleHistoryDiff answers GET /history/diff?dir=&from=[&to=].
func (s *Service) handleHistoryDiff(w http.ResponseWriter, r *http.Request) {
	var changes []agentproto.Change
	err := asAgent(func() (err error) { changes, err = s.historyDiff(r); return err })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, agentproto.ChangeList{Changes: changes})
}

func (s *Service) historyDiff(r *http.Request) ([]agentproto.Change, error) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	if from == "" {
		return nil, errdefs.Invalid("invalid_parameter", "from names no checkpoint")
	}
	p, err := s.historyDir(q.Get("dir"))
	if err != nil {
		return nil, err
	}
	st, err := s.history.get(p.Abs, false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, noHistory(p.Abs)
	}
	var tree *os.File
	if to == "" {
		if tree, err = s.openTree(p, false); err != nil {
			return nil, err
		}
		defer tree.Close()
	}
	changes, err := st.Diff(r.Context(), tree, from, to)
	return wireChanges(changes), err
}

func wireCheckpoint(cp history.Checkpoint) agentproto.Checkpoint {
	out := agentproto.Checkpoint{
		ID:        cp.ID,
		CreatedAt: cp.CreatedAt,
		Message:   cp.Message,
		Kind:      cp.Kind,
		Files:     cp.Files,
		Entries:   cp.Entries,
		Bytes:     cp.Bytes,
		Parent:    cp.Parent,
	}
	for _, sk := range cp.Skipped {
		out.Skipped = append(out.Skipped, agentproto.SkippedEntry{Path: sk.Path, Reason: sk.Reason})
	}
	return out
}

func wireChanges(changes []history.Change) []agentproto.Change {
	out := make([]agentproto.Change, 0, len(changes))
	for _, c := range changes {
		out = append(out, agentproto.Change{Path: c.Path, Change: c.Change, Type: c.Type})
	}
	return out
}
