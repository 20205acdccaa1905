package agent

import (
	"archive/tar"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// handleTarDownload answers GET /files/tar?path=: a tar of the directory.
// Symlinks are stored as symlinks and never followed; FIFOs, sockets and
// devices are left out. Entry names are relative to the directory.
func (s *Server) handleTarDownload(w http.ResponseWriter, r *http.Request) {
	p, err := s.resolve(r.URL.Query().Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	fd, err := s.root.open(p.Rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		s.writeError(w, r, fsError(err, p.Abs))
		return
	}
	defer unix.Close(fd)
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	tw := tar.NewWriter(w)
	if err := tarDir(tw, fd, ""); err != nil {
		// The status is sent: a truncated stream is how the client learns.
		s.log.Warn("tar download failed", "path", p.Abs, "err", err)
		return
	}
	if err := tw.Close(); err != nil {
		s.log.Debug("tar download: close", "path", p.Abs, "err", err)
	}
}

// tarDir writes the entries of the directory open as dirfd, names prefixed
// by prefix, and recurses into subdirectories through fds opened with
// O_NOFOLLOW relative to their parent.
func tarDir(tw *tar.Writer, dirfd int, prefix string) error {
	names, err := readDirNames(dirfd)
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
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			err = tarDir(tw, fd, prefix+name+"/")
			unix.Close(fd)
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := tarFile(tw, dirfd, name, prefix+name); err != nil {
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

// tarFile writes one regular file, sized by fstat of the fd it reads, so
// a file replaced or truncated meanwhile still makes a well-formed entry.
func tarFile(tw *tar.Writer, dirfd int, name, entry string) error {
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

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
