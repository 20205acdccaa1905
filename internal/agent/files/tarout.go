package files

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
)

// handleTarDownload answers GET /files/tar?path=: a tar of the directory.
// Symlinks are stored as symlinks and never followed; FIFOs, sockets,
// devices and proc file systems (see onProc) are left out. Entry names are
// relative to the directory. The holes of sparse files, sent as zeros, are
// bounded together by MaxTarBytes: past it the stream is cut.
func (s *Service) handleTarDownload(w http.ResponseWriter, r *http.Request) {
	p, err := s.root.Resolve(r.URL.Query().Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	fd, err := s.root.Open(p.Rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		s.writeError(w, r, Classify(err, p.Abs))
		return
	}
	defer unix.Close(fd)
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	tw := tar.NewWriter(w)
	out := &tarOut{tw: tw, maxHoles: s.cfg.MaxTarBytes}
	if err := out.dir(fd, ""); err != nil {
		// The status is sent: a truncated stream is how the client learns.
		// Aborted, not ended: a tar that stops between entries without
		// its trailer would read as a whole, shorter archive.
		s.log.Warn("tar download failed", "path", p.Abs, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err := tw.Close(); err != nil {
		s.log.Debug("tar download: close", "path", p.Abs, "err", err)
	}
}

// tarOut is one download: its writer, the bytes of holes it has filled
// with zeros and the most it may.
type tarOut struct {
	tw              *tar.Writer
	holes, maxHoles int64
}

// dir writes the entries of the directory open as dirfd, names prefixed
// by prefix, and recurses into subdirectories through fds opened with
// O_NOFOLLOW relative to their parent.
func (t *tarOut) dir(dirfd int, prefix string) error {
	tw := t.tw
	names, err := dirent.Names(dirfd)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return err
		}
		hdr := tarHeader(prefix+name, &st)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			if onProc(fd) {
				unix.Close(fd)
				continue
			}
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				unix.Close(fd)
				return err
			}
			err = t.dir(fd, prefix+name+"/")
			unix.Close(fd)
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := t.file(dirfd, name, prefix+name); err != nil {
				return err
			}
		case unix.S_IFLNK:
			link, err := readlinkAt(dirfd, name)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		}
	}
	return nil
}

// file writes one regular file, sized by fstat of the fd it reads, so a
// file replaced or truncated meanwhile still makes a well-formed entry.
func (t *tarOut) file(dirfd int, name, entry string) error {
	tw := t.tw
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ELOOP {
			return nil // gone, or swapped for a link, since the listing
		}
		return err
	}
	f := os.NewFile(uintptr(fd), entry)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	if st.Blocks*512 < st.Size {
		holes := holeBytes(fd, st.Size, st.Blocks*512)
		if holes > t.maxHoles-t.holes {
			return fmt.Errorf("%s: the download's sparse files hold more than %d bytes of holes", entry, t.maxHoles)
		}
		t.holes += holes
	}
	hdr := tarHeader(entry, &st)
	hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, st.Size))
	if err != nil {
		return err
	}
	// Shrunk while read: pad, the header already promised st.Size bytes.
	_, err = io.CopyN(tw, zeros{}, st.Size-n)
	return err
}

func tarHeader(name string, st *unix.Stat_t) *tar.Header {
	return &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()),
		Format:  tar.FormatPAX,
	}
}

// holeBytes is how much of the file open as fd, size bytes long with
// alloc bytes on disk, is holes, as SEEK_DATA and SEEK_HOLE find them
// (a compressed file's blocks are fewer than its size without holes), or
// else its size less its blocks. It leaves the offset at 0.
func holeBytes(fd int, size, alloc int64) int64 {
	defer unix.Seek(fd, 0, io.SeekStart)
	var holes, off int64
	for off < size {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			return holes + size - off
		}
		if err != nil {
			return size - alloc
		}
		holes += data - off
		if off, err = unix.Seek(fd, data, unix.SEEK_HOLE); err != nil {
			return size - alloc
		}
	}
	return holes
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
