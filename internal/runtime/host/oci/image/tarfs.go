package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Bounds on an archive's index.
const (
	maxTarEntries = 1 << 16 // an image archive holds a few per layer
	maxLinkHops   = 8
)

// tarFS reads the regular files of a tar in place: one pass over the
// headers finds where each file's bytes lie, and Open reads them from
// there. Symlinks and hard links inside the archive are aliases of what
// they lead to (docker save links shared layers); a name with "..", an
// absolute name, a link that leads out of the archive, a sparse file or
// a device refuses the whole archive, as does a name written twice.
//
// The file stays open until Close and the last reader Open returned are
// both closed.
type tarFS struct {
	f     *os.File
	files map[string]tarEntry

	mu     sync.Mutex
	refs   int // readers open
	closed bool
}

type tarEntry struct {
	off, size int64
}

var _ fs.FS = (*tarFS)(nil)

// openTarFS indexes the tar file at name.
func openTarFS(name string) (_ *tarFS, retErr error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer func() {
		if retErr != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	var magic [4]byte
	if n, _ := f.ReadAt(magic[:], 0); isCompressed(magic[:n]) {
		return nil, errdefs.Invalid(CodeInvalid, "%s is a compressed archive; decompress it first", name)
	}

	t := &tarFS{f: f, files: map[string]tarEntry{}}
	links := map[string]string{} // name → the name it leads to
	tr := tar.NewReader(f)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "%s is not a valid tar archive", name)
		}
		if n == maxTarEntries {
			return nil, errdefs.Invalid(CodeInvalid, "%s holds more than %d entries", name, maxTarEntries)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		clean, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		if clean == "." {
			continue
		}
		if _, dup := t.files[clean]; dup {
			return nil, errdefs.Invalid(CodeInvalid, "the archive holds %q twice", hdr.Name)
		}
		if _, dup := links[clean]; dup {
			return nil, errdefs.Invalid(CodeInvalid, "the archive holds %q twice", hdr.Name)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if isSparse(hdr) {
				return nil, errdefs.Invalid(CodeInvalid, "the archive's %q is a sparse file", hdr.Name)
			}
			// archive/tar reads no further than the header: the file's
			// offset is where the data starts.
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, fmt.Errorf("image: %w", err)
			}
			if hdr.Size > fi.Size()-off {
				return nil, errdefs.Invalid(CodeInvalid, "%s is truncated", name)
			}
			t.files[clean] = tarEntry{off: off, size: hdr.Size}
		case tar.TypeSymlink:
			if strings.HasPrefix(hdr.Linkname, "/") {
				return nil, errdefs.Invalid(CodeInvalid, "the archive's symlink %q leads to an absolute name", hdr.Name)
			}
			target := path.Join(path.Dir(clean), hdr.Linkname)
			if !fs.ValidPath(target) {
				return nil, errdefs.Invalid(CodeInvalid, "the archive's symlink %q leads out of it", hdr.Name)
			}
			links[clean] = target
		case tar.TypeLink:
			target, err := entryName(hdr.Linkname)
			if err != nil {
				return nil, err
			}
			links[clean] = target
		default:
			return nil, errdefs.Invalid(CodeInvalid, "the archive's %q is of tar type %q, which an image archive does not hold", hdr.Name, hdr.Typeflag)
		}
	}
	// Links become aliases of the files they lead to; a link to nothing
	// (or round in circles) is left out, and found missing if it is used.
	for name, target := range links {
		for range maxLinkHops {
			if next, ok := links[target]; ok {
				target = next
				continue
			}
			if e, ok := t.files[target]; ok {
				t.files[name] = e
			}
			break
		}
	}
	return t, nil
}

// entryName cleans an archive entry's name, refusing absolute names and
// any ".." component.
func entryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", errdefs.Invalid(CodeInvalid, "the archive holds an absolute name %q", name)
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == ".." {
			return "", errdefs.Invalid(CodeInvalid, "the archive holds a name with \"..\", %q", name)
		}
	}
	clean := path.Clean(name)
	if clean != "." && !fs.ValidPath(clean) {
		return "", errdefs.Invalid(CodeInvalid, "the archive holds an invalid name %q", name)
	}
	return clean, nil
}

// isSparse reports whether hdr is a sparse file, whose data in the
// archive is not its content.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// isCompressed reports whether b starts as gzip or zstd data does.
func isCompressed(b []byte) bool {
	return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) || bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd})
}

// Open opens a regular file of the archive (or a link to one).
func (t *tarFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	e, ok := t.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrClosed}
	}
	t.refs++
	return &tarFile{t: t, name: name, size: e.size, r: io.NewSectionReader(t.f, e.off, e.size)}, nil
}

// Close closes the archive once no reader is open, or when the last one
// closes.
func (t *tarFS) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.refs == 0 {
		return t.f.Close()
	}
	return nil
}

func (t *tarFS) release() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refs--
	if t.closed && t.refs == 0 {
		return t.f.Close()
	}
	return nil
}

// tarFile is one file of a tarFS being read.
type tarFile struct {
	t      *tarFS
	name   string
	size   int64
	r      *io.SectionReader
	closed bool
}

func (f *tarFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, fs.ErrClosed
	}
	return f.r.Read(p)
}

func (f *tarFile) Stat() (fs.FileInfo, error) { return tarFileInfo{f}, nil }

func (f *tarFile) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	return f.t.release()
}

type tarFileInfo struct{ f *tarFile }

func (i tarFileInfo) Name() string       { return path.Base(i.f.name) }
func (i tarFileInfo) Size() int64        { return i.f.size }
func (i tarFileInfo) Mode() fs.FileMode  { return 0o444 }
func (i tarFileInfo) ModTime() time.Time { return time.Time{} }
func (i tarFileInfo) IsDir() bool        { return false }
func (i tarFileInfo) Sys() any           { return nil }
