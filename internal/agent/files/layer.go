package files

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/mountinfo"
)

// Layer snapshots (the kubernetes driver's). A Pod's root is its image's
// files under an upper layer only the node sees, so the agent records,
// as it starts, which paths the image gave the root (RecordBaseline), and
// writes, when asked, what changed since as an OCI image layer
// (Service.WriteLayer): every entry made or changed since (its ctime is
// not before the record's) and a whiteout for each path of the record
// that is gone. An image of the Pod's image and that layer holds the
// sandbox's files as they are. Only the root's own file system counts:
// what is mounted on it (the kubelet's /etc/hosts, /proc, /dev, the
// agent's own /.hutch) is left out, and the next Pod gets its own.

// Baseline is what the root held when the agent started.
type Baseline struct {
	// since is the coarse clock (the file systems' ctime clock) when the
	// record began: nothing of the sandbox ran before it.
	since unix.Timespec
	// paths are the root's entries, relative, without the mounts.
	paths map[string]struct{}
	// mounts are the mount points under the root, relative.
	mounts map[string]bool
}

// RecordBaseline walks root and records its entries. The agent calls it
// before it serves, while nothing else runs in the sandbox.
func RecordBaseline(root *Root) (*Baseline, error) {
	var since unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &since); err != nil {
		return nil, err
	}
	mounts, err := mountsUnder(root.real)
	if err != nil {
		return nil, err
	}
	b := &Baseline{since: since, paths: map[string]struct{}{}, mounts: mounts}
	// As the agent, not the sandbox's user: every file counts.
	err = asAgent(func() error {
		fd, err := root.openTop()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return walkOwn(fd, "", mounts, func(_ int, _, entry string, _ *unix.Stat_t) error {
			b.paths[entry] = struct{}{}
			return nil
		})
	})
	return b, err
}

// openTop opens the root itself to read its entries (its own fd is
// O_PATH).
func (r *Root) openTop() (int, error) {
	return unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// Paths is how many entries the baseline holds.
func (b *Baseline) Paths() int { return len(b.paths) }

// LayerStats says what a layer holds: its entries (whiteouts included)
// and its files' bytes.
type LayerStats struct {
	Entries, Bytes int64
}

// WriteLayer writes to w, as a tar in OCI layer form, what changed in the
// root since b was recorded. The caller keeps the sandbox's processes
// stopped meanwhile, or the layer is only as consistent as a copy of
// files in use is.
func (s *Service) WriteLayer(w io.Writer, b *Baseline) (st LayerStats, err error) {
	// As the agent, not the sandbox's user: every file counts.
	err = asAgent(func() error {
		st, err = s.writeLayer(w, b)
		return err
	})
	return st, err
}

func (s *Service) writeLayer(w io.Writer, b *Baseline) (LayerStats, error) {
	var st LayerStats
	fd, err := s.root.openTop()
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	tw := tar.NewWriter(w)
	out := &tarOut{tw: tw, maxHoles: s.cfg.MaxTarBytes}
	seen := make(map[string]bool, len(b.paths)) // entry → is a directory
	links := map[[2]uint64]string{}             // (dev, ino) → first entry
	err = walkOwn(fd, "", b.mounts, func(dirfd int, name, entry string, fi *unix.Stat_t) error {
		seen[entry] = fi.Mode&unix.S_IFMT == unix.S_IFDIR
		if !changedSince(fi, b.since) {
			if _, was := b.paths[entry]; was {
				return nil
			}
		}
		hdr := tarHeader(entry, fi)
		switch fi.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			hdr.Typeflag, hdr.Name = tar.TypeDir, entry+"/"
		case unix.S_IFLNK:
			link, err := readlinkAt(dirfd, name)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
		case unix.S_IFIFO:
			hdr.Typeflag = tar.TypeFifo
		case unix.S_IFREG:
			key := [2]uint64{fi.Dev, fi.Ino}
			if first, ok := links[key]; ok {
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
				break
			}
			if fi.Nlink > 1 {
				links[key] = entry
			}
			st.Entries++
			st.Bytes += fi.Size
			return out.file(dirfd, name, entry)
		default:
			return nil // sockets and devices are the running system's
		}
		st.Entries++
		return tw.WriteHeader(hdr)
	})
	if err != nil {
		return st, err
	}
	for _, entry := range whiteouts(b.paths, seen) {
		hdr := &tar.Header{Name: entry, Typeflag: tar.TypeReg, Mode: 0o600, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return st, err
		}
		st.Entries++
	}
	return st, tw.Close()
}

// whiteouts are the OCI whiteouts (".wh.<name>" beside it) of the paths
// of the baseline that are gone, sorted: only the topmost of what went,
// those whose directory is still there; a directory gone or made a file
// or a link hides what it held.
func whiteouts(was map[string]struct{}, seen map[string]bool) []string {
	var out []string
	for p := range was {
		if _, ok := seen[p]; ok {
			continue
		}
		dir := path.Dir(p)
		if dir != "." && !seen[dir] {
			continue
		}
		out = append(out, path.Join(dir, ".wh."+path.Base(p)))
	}
	sort.Strings(out)
	return out
}

// changedSince says whether the entry changed (its content, its metadata
// or its names) at or after since.
func changedSince(st *unix.Stat_t, since unix.Timespec) bool {
	return st.Ctim.Sec > since.Sec || st.Ctim.Sec == since.Sec && st.Ctim.Nsec >= since.Nsec
}

// walkOwn calls visit for each entry under the directory open as dirfd,
// names prefixed by prefix, depth first in name order, and recurses into
// directories through fds opened with O_NOFOLLOW relative to their
// parent; it passes over the mount points in mounts and what is under
// them.
func walkOwn(dirfd int, prefix string, mounts map[string]bool, visit func(dirfd int, name, entry string, st *unix.Stat_t) error) error {
	names, err := dirent.Names(dirfd)
	if err != nil {
		return fmt.Errorf("/%s: %w", prefix, err)
	}
	sort.Strings(names)
	for _, name := range names {
		entry := prefix + name
		if mounts[entry] {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return err
		}
		if err := visit(dirfd, name, entry, &st); err != nil {
			return fmt.Errorf("/%s: %w", entry, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
				continue // gone, or swapped, since the listing
			}
			return fmt.Errorf("/%s: %w", entry, err)
		}
		err = walkOwn(fd, entry+"/", mounts, visit)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// mountsUnder lists the mount points strictly under root, relative to it,
// from /proc/self/mountinfo.
func mountsUnder(root string) (map[string]bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("list the mounts: %w", err)
	}
	defer f.Close()
	out := map[string]bool{}
	prefix := strings.TrimSuffix(root, "/") + "/"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mount-point options ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := mountinfo.Unescape(fields[4])
		if rel, ok := strings.CutPrefix(mp, prefix); ok && rel != "" {
			out[rel] = true
		}
	}
	return out, sc.Err()
}
