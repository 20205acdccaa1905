package files

import (
	"archive/tar"
	"io"
	"net/http"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// beneath resolves tar entries under the target directory: never above it
// and never through any symlink, whether the archive made it or not.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// handleTarUpload answers PUT /files/tar?path=: the body, a tar, is
// extracted under the directory (created if missing). Regular files,
// directories and symlinks only; each file is bounded by MaxFileBytes, the
// files together by MaxTarBytes (by the sizes the archive declares, so a
// sparse file counts its holes), and what the upload makes by
// MaxTarEntries. A refused upload removes, best effort, what it had
// created.
func (s *Service) handleTarUpload(w http.ResponseWriter, r *http.Request) {
	res, err := s.untar(r.URL.Query().Get("path"), r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, res)
}

func (s *Service) untar(rawPath string, body io.Reader) (_ agentproto.TarResult, retErr error) {
	p, err := s.root.Resolve(rawPath)
	if err != nil {
		return agentproto.TarResult{}, err
	}
	created, err := s.root.mkdirAll(p, 0o755)
	if err != nil {
		return agentproto.TarResult{}, err
	}
	if created {
		defer func() {
			if retErr != nil {
				s.root.removeEmptyDir(p)
			}
		}()
	}
	base, err := s.root.Open(p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return agentproto.TarResult{}, Classify(err, p.Abs)
	}
	defer unix.Close(base)
	x := &extractor{base: base, abs: p.Abs, limit: s.cfg.MaxFileBytes, maxBytes: s.cfg.MaxTarBytes, maxMade: s.cfg.MaxTarEntries}
	defer func() {
		if retErr != nil {
			x.rollback()
		}
	}()
	tr := tar.NewReader(body)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return agentproto.TarResult{}, errdefs.Wrap(errdefs.ErrInvalid, "invalid_tar", err, "the upload is not a valid tar archive")
		}
		if err := x.entry(hdr, tr); err != nil {
			return agentproto.TarResult{}, err
		}
	}
	// The archive ended; its body's signature is checked at the body's
	// end, and a mismatch rolls back what the upload made.
	if err := httpio.DrainVerified(body); err != nil {
		return agentproto.TarResult{}, err
	}
	x.applyDirModes()
	return agentproto.TarResult{Path: p.Abs, Files: x.files, Bytes: x.bytes}, nil
}

// extractor writes entries below base and remembers what it created.
type extractor struct {
	base  int
	abs   string
	limit int64 // per file
	// maxBytes bounds bytes, the sum of the files' sizes; maxMade bounds
	// made, the files and symlinks written and directories created.
	maxBytes int64
	maxMade  int
	made     int
	files    int
	bytes    int64
	// created lists, in order, the entries that did not exist before, for
	// rollback; dirModes the modes to give directories at the end.
	created  []createdEntry
	dirModes []dirMode
}

type createdEntry struct {
	rel string
	dir bool
}

type dirMode struct {
	rel  string
	mode uint32
}

func (x *extractor) entry(hdr *tar.Header, body io.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	rel, err := entryPath(hdr.Name)
	if err != nil {
		return err
	}
	abs := path.Join(x.abs, rel)
	mode := uint32(hdr.Mode) & 0o777
	switch hdr.Typeflag {
	case tar.TypeDir:
		if rel == "." {
			return nil
		}
		fd, err := x.dir(rel, abs)
		if err != nil {
			return err
		}
		unix.Close(fd)
		x.dirModes = append(x.dirModes, dirMode{rel, mode})
		return nil
	case tar.TypeReg:
		if rel == "." {
			return errdefs.Invalid("invalid_path", "tar entry %q has no name", hdr.Name)
		}
		if hdr.Size > x.limit {
			return tooLarge(abs, x.limit)
		}
		if hdr.Size > x.maxBytes-x.bytes {
			return errdefs.New(errdefs.ErrTooLarge, "tar_too_large", "the upload's files add up to more than %d bytes (a sparse file counts its holes), the most one upload may unpack", x.maxBytes)
		}
		return x.file(rel, abs, mode, body, hdr.Size)
	case tar.TypeSymlink:
		if rel == "." {
			return errdefs.Invalid("invalid_path", "tar entry %q has no name", hdr.Name)
		}
		return x.symlink(rel, abs, hdr.Linkname)
	}
	return errdefs.Invalid("unsupported_tar_entry", "tar entry %q is of type %q: only regular files, directories and symlinks can be uploaded", hdr.Name, string(hdr.Typeflag))
}

// entryPath checks a tar entry name: relative, no NUL, no ".."
// component. It returns the clean name, "." for the directory itself.
func entryPath(name string) (string, error) {
	switch {
	case name == "":
		return "", errdefs.Invalid("invalid_path", "a tar entry has an empty name")
	case strings.IndexByte(name, 0) >= 0:
		return "", errdefs.Invalid("invalid_path", "a tar entry name holds a NUL byte")
	case strings.HasPrefix(name, "/"):
		return "", errdefs.Invalid("invalid_path", "tar entry %q is absolute", name)
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", errdefs.Invalid("invalid_path", "tar entry %q has a .. component", name)
		}
	}
	return path.Clean(name), nil
}

// make counts one more thing the upload makes, refusing it past maxMade.
func (x *extractor) make() error {
	if x.made >= x.maxMade {
		return errdefs.New(errdefs.ErrTooLarge, "tar_too_many_entries", "the upload makes more than %d files, directories and symlinks, the most one upload may", x.maxMade)
	}
	x.made++
	return nil
}

// dir opens rel below base, creating the missing directories on the way,
// never through a symlink. The caller closes the O_PATH fd.
func (x *extractor) dir(rel, abs string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := Openat2(x.base, rel, &how)
	if err == nil && onProc(fd) {
		// A proc mounted below the target, as the sandbox's /proc is
		// below /: nothing is written there (see onProc).
		unix.Close(fd)
		return -1, procRefused(abs)
	}
	if err == nil {
		return fd, nil
	}
	if err != unix.ENOENT {
		return -1, x.pathError(err, abs)
	}
	fd, err = Openat2(x.base, ".", &how)
	if err != nil {
		return -1, Classify(err, x.abs)
	}
	end := 0
	for _, c := range strings.Split(rel, "/") {
		end += len(c)
		done := rel[:end] // shares rel's bytes: no copy per level in created
		end++
		next, err := Openat2(fd, c, &how)
		if err == unix.ENOENT {
			if err = x.make(); err != nil {
				unix.Close(fd)
				return -1, err
			}
			if err = unix.Mkdirat(fd, c, 0o755); err == nil {
				x.created = append(x.created, createdEntry{done, true})
			}
			if err == nil || err == unix.EEXIST {
				next, err = Openat2(fd, c, &how)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, x.pathError(err, path.Join(x.abs, done))
		}
		if onProc(next) {
			unix.Close(next)
			return -1, procRefused(path.Join(x.abs, done))
		}
		fd = next
	}
	return fd, nil
}

// pathError explains the errors of a resolution beneath the target.
func (x *extractor) pathError(err error, abs string) error {
	if err == unix.ELOOP || err == unix.EXDEV {
		return errdefs.Wrap(errdefs.ErrInvalid, "invalid_path", err, "%s: a tar entry cannot be written through a symlink", abs)
	}
	return Classify(err, abs)
}

// parent opens the directory of rel (creating it) and returns its name.
func (x *extractor) parent(rel, abs string) (int, string, error) {
	dir, name := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	fd, err := x.dir(path.Clean(dir), path.Dir(abs))
	return fd, name, err
}

func (x *extractor) file(rel, abs string, mode uint32, body io.Reader, size int64) error {
	dirfd, name, err := x.parent(rel, abs)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := x.make(); err != nil {
		return err
	}
	existed := exists(dirfd, name)
	if err := writeAtomic(dirfd, name, mode, body, x.limit); err != nil {
		return writeError(err, abs, x.limit)
	}
	if !existed {
		x.created = append(x.created, createdEntry{rel, false})
	}
	x.files++
	x.bytes += size
	return nil
}

func (x *extractor) symlink(rel, abs, target string) error {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return errdefs.Invalid("invalid_path", "symlink %s has an empty or NUL target", abs)
	}
	dirfd, name, err := x.parent(rel, abs)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := x.make(); err != nil {
		return err
	}
	existed := false
	err = unix.Symlinkat(target, dirfd, name)
	if err == unix.EEXIST {
		existed = true
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return Classify(unix.EEXIST, abs)
		}
		if err = unix.Unlinkat(dirfd, name, 0); err == nil {
			err = unix.Symlinkat(target, dirfd, name)
		}
	}
	if err != nil {
		return Classify(err, abs)
	}
	if !existed {
		x.created = append(x.created, createdEntry{rel, false})
	}
	return nil
}

func exists(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// applyDirModes gives the archive's directories their modes, last, so a
// read-only directory did not stop its own entries being written.
func (x *extractor) applyDirModes() {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath}
	for i := len(x.dirModes) - 1; i >= 0; i-- {
		d := x.dirModes[i]
		fd, err := Openat2(x.base, d.rel, &how)
		if err != nil {
			continue
		}
		unix.Fchmod(fd, d.mode)
		unix.Close(fd)
	}
}

// rollback removes, newest first, what the upload created. It resolves
// each parent beneath the target without symlinks and unlinks the final
// name, so it never follows a link. Replaced files stay replaced.
func (x *extractor) rollback() {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath}
	for i := len(x.created) - 1; i >= 0; i-- {
		c := x.created[i]
		dirfd, err := Openat2(x.base, path.Dir(c.rel), &how)
		if err != nil {
			continue
		}
		flags := 0
		if c.dir {
			flags = unix.AT_REMOVEDIR
		}
		unix.Unlinkat(dirfd, path.Base(c.rel), flags)
		unix.Close(dirfd)
	}
}
