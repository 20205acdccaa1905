package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/sparse"
)

// Config is what the file API needs.
type Config struct {
	// Root is the sandbox root every path is resolved in.
	Root *Root
	// MaxFileBytes bounds one file read or written, and each file of a tar
	// upload.
	MaxFileBytes int64
	// MaxTarBytes bounds the sum of the sizes of a tar upload's files, as
	// the archive declares them (a sparse file's holes count), and the
	// holes of a tar download's sparse files, which go as zeros.
	MaxTarBytes int64
	// MaxTarEntries bounds what one tar upload makes: each file and
	// symlink it writes and each directory it creates, those its entries'
	// names imply included.
	MaxTarEntries int
	// MaxRequestBytes bounds a JSON request body.
	MaxRequestBytes int64
	// HistoryDir is where the file histories of tracked directories are
	// kept (history.go), in the agent's view; empty means
	// <Root>/.hutch-history.
	HistoryDir string
	Log        *slog.Logger
}

// Service serves the file API and file history.
type Service struct {
	cfg  Config
	root *Root
	log  *slog.Logger
	// history holds the file histories, each opened on first use.
	history *historyStores
}

// New is the file API of cfg.
func New(cfg Config) *Service {
	return &Service{cfg: cfg, root: cfg.Root, log: cfg.Log, history: newHistoryStores(cfg)}
}

// Routes adds the file API's routes to mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /files", s.handleRead)
	mux.HandleFunc("PUT /files", s.handleWrite)
	mux.HandleFunc("DELETE /files", s.handleRemove)
	mux.HandleFunc("GET /files/list", s.handleList)
	mux.HandleFunc("GET /files/stat", s.handleStat)
	mux.HandleFunc("POST /files/mkdir", s.handleMkdir)
	mux.HandleFunc("POST /files/move", s.handleMove)
	mux.HandleFunc("GET /files/tar", s.handleTarDownload)
	mux.HandleFunc("PUT /files/tar", s.handleTarUpload)
	mux.HandleFunc("POST /history/checkpoints", s.handleCheckpoint)
	mux.HandleFunc("GET /history/checkpoints", s.handleListCheckpoints)
	mux.HandleFunc("POST /history/restore", s.handleRestore)
	mux.HandleFunc("GET /history/diff", s.handleHistoryDiff)
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, s.log, err)
}

// handleRead answers GET /files?path=: the raw content of a regular file.
func (s *Service) handleRead(w http.ResponseWriter, r *http.Request) {
	p, err := s.root.Resolve(r.URL.Query().Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// O_NONBLOCK: opening a FIFO must not hang; it is refused below.
	fd, err := s.root.Open(p.Rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		s.writeError(w, r, Classify(err, p.Abs))
		return
	}
	f := os.NewFile(uintptr(fd), p.Abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		s.writeError(w, r, Classify(err, p.Abs))
		return
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		s.writeError(w, r, errdefs.Invalid("is_a_directory", "%s is a directory", p.Abs))
		return
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		s.writeError(w, r, errdefs.Invalid("not_a_regular_file", "%s is not a regular file", p.Abs))
		return
	case st.Size > s.cfg.MaxFileBytes:
		s.writeError(w, r, tooLarge(p.Abs, s.cfg.MaxFileBytes))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, io.LimitReader(f, st.Size)); err != nil {
		s.log.Debug("read file: copy ended early", "path", p.Abs, "err", err)
	}
}

// handleWrite answers PUT /files?path=&mode=&parents=: an atomic write of
// the body, after making the missing directories above it with parents.
func (s *Service) handleWrite(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	parents := false
	if v := q.Get("parents"); v != "" {
		var err error
		if parents, err = strconv.ParseBool(v); err != nil {
			s.writeError(w, r, errdefs.Invalid("invalid_parameter", "parents must be true or false, not %q", v))
			return
		}
	}
	fi, err := s.writeFile(q.Get("path"), q.Get("mode"), parents, r.ContentLength, r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, fi)
}

// writeFile writes body to a temporary file next to the target (created
// with O_EXCL, so never through a link), sets its mode and renames it over
// the target. Nothing is left behind on failure.
func (s *Service) writeFile(rawPath, rawMode string, parents bool, length int64, body io.Reader) (agentproto.FileInfo, error) {
	p, err := s.root.Resolve(rawPath)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	mode, err := parseMode(rawMode, 0o644)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	if p.isRoot() {
		return agentproto.FileInfo{}, errdefs.Invalid("is_a_directory", "%s is a directory", p.Abs)
	}
	if length > s.cfg.MaxFileBytes {
		return agentproto.FileInfo{}, tooLarge(p.Abs, s.cfg.MaxFileBytes)
	}
	if parents {
		dir, _ := p.split()
		if _, err := s.root.mkdirAll(Path{Abs: path.Dir(p.Abs), Rel: dir}, 0o755); err != nil {
			return agentproto.FileInfo{}, err
		}
	}
	dirfd, name, err := s.root.parent(p)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	defer unix.Close(dirfd)
	if err := writeAtomic(dirfd, name, mode, body, s.cfg.MaxFileBytes); err != nil {
		return agentproto.FileInfo{}, writeError(err, p.Abs, s.cfg.MaxFileBytes)
	}
	return statAt(dirfd, name, p.Abs)
}

var errTooLarge = errors.New("content over the limit")

// writeError classifies an error of writeAtomic about abs.
func writeError(err error, abs string, limit int64) error {
	var classified *errdefs.Error
	switch {
	case errors.Is(err, errTooLarge):
		return tooLarge(abs, limit)
	case errors.As(err, &classified):
		return err
	}
	return Classify(err, abs)
}

// readError marks an error of the request body, as opposed to the disk.
type readError struct{ err error }

func (e readError) Error() string { return "read the upload: " + e.err.Error() }
func (e readError) Unwrap() error { return e.err }

type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// writeAtomic writes body to name in dirfd through a temporary file renamed
// over name, its whole blocks of zeros left as holes (see copySparse).
// errTooLarge means body held more than limit bytes.
func writeAtomic(dirfd int, name string, mode uint32, body io.Reader, limit int64) (retErr error) {
	tmp := tempName(name)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		f.Close()
		if retErr != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	// Runs of zeros become holes (internal/base/sparse): a sparse file of a tar
	// upload takes on disk about its data, not its size.
	var c sparse.Copier
	n, err := c.Copy(context.Background(), f, io.LimitReader(bodyReader{body}, limit+1))
	switch {
	case err != nil:
		var re readError
		if errors.Is(err, httpio.ErrBodyUnverified) {
			return httpio.ErrBodyUnverified
		}
		if errors.As(err, &re) {
			return errdefs.Wrap(errdefs.ErrInvalid, "upload_failed", re.err, "reading the upload failed")
		}
		return err
	case n > limit:
		return errTooLarge
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return err
	}
	return nil
}

// tempName is ".<name>.hutch-<random>", short enough for NAME_MAX.
func tempName(name string) string {
	if len(name) > 200 {
		name = name[:200]
	}
	var b [tempRandom]byte
	rand.Read(b[:])
	return "." + name + tempMark + hex.EncodeToString(b[:])
}

const (
	tempMark   = ".hutch-"
	tempRandom = 6 // bytes, 12 hex digits
)

// IsTempName reports whether name is one tempName makes: a file the
// agent is writing, not yet in place.
func IsTempName(name string) bool {
	i := strings.LastIndex(name, tempMark)
	if !strings.HasPrefix(name, ".") || i < 1 {
		return false
	}
	hexPart := name[i+len(tempMark):]
	if len(hexPart) != 2*tempRandom {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// handleRemove answers DELETE /files?path=&recursive=.
func (s *Service) handleRemove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive, _ := strconv.ParseBool(q.Get("recursive"))
	if err := s.remove(q.Get("path"), recursive); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) remove(rawPath string, recursive bool) error {
	p, err := s.root.Resolve(rawPath)
	if err != nil {
		return err
	}
	if p.isRoot() {
		return errdefs.Invalid("invalid_path", "the sandbox root %s cannot be removed", p.Abs)
	}
	dirfd, name, err := s.root.parent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Classify(err, p.Abs)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Classify(unix.Unlinkat(dirfd, name, 0), p.Abs)
	}
	if recursive {
		return removeAllAt(dirfd, name, p.Abs)
	}
	return Classify(unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR), p.Abs)
}

// removeAllAt removes name in dirfd and everything below it, never
// following a symlink: directories are opened with O_NOFOLLOW relative to
// their parent's fd, and links are unlinked, not entered.
func removeAllAt(dirfd int, name, abs string) error {
	err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.ENOTEMPTY && err != unix.EEXIST {
		if err == unix.ENOTDIR {
			err = unix.Unlinkat(dirfd, name, 0)
		}
		return Classify(err, abs)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Classify(err, abs)
	}
	names, err := dirent.Names(fd)
	if err != nil {
		unix.Close(fd)
		return Classify(err, abs)
	}
	for _, n := range names {
		child := path.Join(abs, n)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			unix.Close(fd)
			return Classify(err, child)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = removeAllAt(fd, n, child)
		} else if err = unix.Unlinkat(fd, n, 0); err == unix.ENOENT {
			err = nil
		}
		if err != nil {
			unix.Close(fd)
			return Classify(err, child)
		}
	}
	unix.Close(fd)
	return Classify(unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR), abs)
}

// handleList answers GET /files/list?path=: the entries of a directory,
// sorted by name, each with lstat semantics.
func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	list, err := s.list(r.URL.Query().Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, list)
}

func (s *Service) list(rawPath string) (agentproto.FileList, error) {
	p, err := s.root.Resolve(rawPath)
	if err != nil {
		return agentproto.FileList{}, err
	}
	fd, err := s.root.Open(p.Rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return agentproto.FileList{}, Classify(err, p.Abs)
	}
	defer unix.Close(fd)
	names, err := dirent.Names(fd)
	if err != nil {
		return agentproto.FileList{}, Classify(err, p.Abs)
	}
	sort.Strings(names)
	list := agentproto.FileList{Path: p.Abs, Entries: make([]agentproto.FileInfo, 0, len(names))}
	for _, n := range names {
		fi, err := statAt(fd, n, path.Join(p.Abs, n))
		if errors.Is(err, errdefs.ErrNotFound) {
			continue // removed while listing
		}
		if err != nil {
			return agentproto.FileList{}, err
		}
		list.Entries = append(list.Entries, fi)
	}
	return list, nil
}

// handleStat answers GET /files/stat?path= with lstat semantics.
func (s *Service) handleStat(w http.ResponseWriter, r *http.Request) {
	fi, err := s.stat(r.URL.Query().Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, fi)
}

func (s *Service) stat(rawPath string) (agentproto.FileInfo, error) {
	p, err := s.root.Resolve(rawPath)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	if p.isRoot() {
		return statAt(s.root.fd, "", p.Abs)
	}
	dirfd, name, err := s.root.parent(p)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	defer unix.Close(dirfd)
	return statAt(dirfd, name, p.Abs)
}

// handleMkdir answers POST /files/mkdir: mkdir -p.
func (s *Service) handleMkdir(w http.ResponseWriter, r *http.Request) {
	var req agentproto.MkdirRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	fi, err := s.mkdir(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, fi)
}

func (s *Service) mkdir(req agentproto.MkdirRequest) (agentproto.FileInfo, error) {
	p, err := s.root.Resolve(req.Path)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	mode, err := parseMode(req.Mode, 0o755)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	created, err := s.root.mkdirAll(p, mode)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	fd, err := s.root.Open(p.Rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return agentproto.FileInfo{}, Classify(err, p.Abs)
	}
	defer unix.Close(fd)
	if created && req.Mode != "" {
		// mkdirat's mode went through the umask; an explicit mode is exact.
		if err := unix.Fchmod(fd, mode); err != nil {
			return agentproto.FileInfo{}, Classify(err, p.Abs)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return agentproto.FileInfo{}, Classify(err, p.Abs)
	}
	return fileInfo(p.Abs, &st), nil
}

// mkdirAll creates p and its missing parents, each resolved inside root,
// and reports whether it created p itself. An existing directory is fine;
// anything else in the way is an error.
func (r *Root) mkdirAll(p Path, mode uint32) (bool, error) {
	if p.isRoot() {
		return false, nil
	}
	comps := strings.Split(p.Rel, "/")
	created := false
	for i := range comps {
		prefix := strings.Join(comps[:i+1], "/")
		abs := sandboxPathOf(r.path, prefix)
		fd, err := r.Open(prefix, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err == nil {
			unix.Close(fd)
			created = false
			continue
		}
		if err == unix.ENOTDIR && i == len(comps)-1 {
			// Its parent is a directory: p itself is something else.
			return false, Classify(unix.EEXIST, abs)
		}
		if err != unix.ENOENT {
			return false, Classify(err, abs)
		}
		parent := "."
		if i > 0 {
			parent = strings.Join(comps[:i], "/")
		}
		pfd, err := r.Open(parent, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return false, Classify(err, sandboxPathOf(r.path, parent))
		}
		err = unix.Mkdirat(pfd, comps[i], mode)
		unix.Close(pfd)
		switch {
		case err == nil:
			created = true
		case err == unix.EEXIST:
			// A racing mkdir made it, or a dangling symlink is in the way.
			fd, err := r.Open(prefix, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				return false, Classify(unix.EEXIST, abs)
			}
			unix.Close(fd)
			created = false
		default:
			return false, Classify(err, abs)
		}
	}
	return created, nil
}

// removeEmptyDir removes the directory p if it is empty, best effort.
func (r *Root) removeEmptyDir(p Path) {
	if p.isRoot() {
		return
	}
	if dirfd, name, err := r.parent(p); err == nil {
		unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		unix.Close(dirfd)
	}
}

// handleMove answers POST /files/move: renameat2, RENAME_NOREPLACE unless
// the request overwrites.
func (s *Service) handleMove(w http.ResponseWriter, r *http.Request) {
	var req agentproto.MoveRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	fi, err := s.move(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, fi)
}

func (s *Service) move(req agentproto.MoveRequest) (agentproto.FileInfo, error) {
	from, err := s.root.Resolve(req.From)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	to, err := s.root.Resolve(req.To)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	if from.isRoot() || to.isRoot() {
		return agentproto.FileInfo{}, errdefs.Invalid("invalid_path", "the sandbox root cannot be moved or replaced")
	}
	fromfd, fromName, err := s.root.parent(from)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	defer unix.Close(fromfd)
	tofd, toName, err := s.root.parent(to)
	if err != nil {
		return agentproto.FileInfo{}, err
	}
	defer unix.Close(tofd)
	var flags uint
	if !req.Overwrite {
		flags = unix.RENAME_NOREPLACE
	}
	switch err := unix.Renameat2(fromfd, fromName, tofd, toName, flags); {
	case err == unix.ENOENT:
		return agentproto.FileInfo{}, Classify(err, from.Abs)
	case err == unix.EINVAL:
		return agentproto.FileInfo{}, errdefs.Wrap(errdefs.ErrInvalid, "invalid_path", err, "cannot move %s into itself", from.Abs)
	case err != nil:
		return agentproto.FileInfo{}, Classify(err, to.Abs)
	}
	return statAt(tofd, toName, to.Abs)
}
