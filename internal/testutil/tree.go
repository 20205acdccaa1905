package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EntryType is the kind of a TreeEntry or TreeNode.
type EntryType string

const (
	TypeFile     EntryType = "file"
	TypeDir      EntryType = "dir"
	TypeSymlink  EntryType = "symlink"
	TypeHardlink EntryType = "hardlink" // only in a TreeEntry: a second name
	TypeChar     EntryType = "char"
	TypeBlock    EntryType = "block"
	TypeFifo     EntryType = "fifo"
	TypeSocket   EntryType = "socket"
)

// TreeEntry is one entry MakeTree makes.
type TreeEntry struct {
	Path string // below the root, slash-separated
	Type EntryType
	// Mode is the permission bits with setuid, setgid and sticky (07777);
	// not for a symlink or a hard link.
	Mode uint32
	// UID and GID own the entry (numeric, as on disk).
	UID, GID int
	// Data is a file's content, written at DataAt; Size, when larger
	// than DataAt+len(Data), extends the file with a hole.
	Data   []byte
	DataAt int64
	Size   int64
	// Target is a symlink's target, or the path (below the root) of the
	// file a hard link names.
	Target string
	// Major and Minor are a device's numbers.
	Major, Minor uint32
	Xattrs       map[string]string
	// Atime and Mtime, when not zero, are set last (a directory's after
	// everything in it is made).
	Atime, Mtime time.Time
}

// MakeTree makes entries under root, an existing directory, in order (a
// directory before what it holds), as root: owners are set with lchown.
func MakeTree(t testing.TB, root string, entries []TreeEntry) {
	t.Helper()
	var timed []TreeEntry
	for _, e := range entries {
		p := filepath.Join(root, filepath.FromSlash(e.Path))
		if err := makeEntry(p, root, e); err != nil {
			t.Fatalf("MakeTree %s (%s): %v", e.Path, e.Type, err)
		}
		if !e.Atime.IsZero() || !e.Mtime.IsZero() {
			timed = append(timed, e)
		}
	}
	// Deepest first, so setting an entry's times never follows a change
	// in what it holds.
	slices.SortStableFunc(timed, func(a, b TreeEntry) int {
		return strings.Count(b.Path, "/") - strings.Count(a.Path, "/")
	})
	for _, e := range timed {
		p := filepath.Join(root, filepath.FromSlash(e.Path))
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if !e.Atime.IsZero() {
			ts[0] = unix.NsecToTimespec(e.Atime.UnixNano())
		}
		if !e.Mtime.IsZero() {
			ts[1] = unix.NsecToTimespec(e.Mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("MakeTree: times of %s: %v", e.Path, err)
		}
	}
}

func makeEntry(p, root string, e TreeEntry) error {
	switch e.Type {
	case TypeFile:
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(e.Data, e.DataAt); err != nil {
			f.Close()
			return err
		}
		if e.Size > e.DataAt+int64(len(e.Data)) {
			if err := f.Truncate(e.Size); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	case TypeDir:
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	case TypeSymlink:
		if err := os.Symlink(e.Target, p); err != nil {
			return err
		}
	case TypeHardlink:
		return os.Link(filepath.Join(root, filepath.FromSlash(e.Target)), p)
	case TypeChar, TypeBlock, TypeFifo, TypeSocket:
		kind := map[EntryType]uint32{TypeChar: unix.S_IFCHR, TypeBlock: unix.S_IFBLK, TypeFifo: unix.S_IFIFO, TypeSocket: unix.S_IFSOCK}[e.Type]
		if err := unix.Mknod(p, kind|0o600, int(unix.Mkdev(e.Major, e.Minor))); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown type %q", e.Type)
	}
	if err := os.Lchown(p, e.UID, e.GID); err != nil {
		return err
	}
	if e.Type != TypeSymlink {
		if err := unix.Fchmodat(unix.AT_FDCWD, p, e.Mode, 0); err != nil {
			return err
		}
	}
	for k, v := range e.Xattrs {
		if err := unix.Lsetxattr(p, k, []byte(v), 0); err != nil {
			return fmt.Errorf("setxattr %s: %w", k, err)
		}
	}
	return nil
}

// TreeNode is what ReadTree reads of one entry.
type TreeNode struct {
	Type     EntryType
	Mode     uint32 // 07777
	UID, GID uint32
	Size     int64  // files and symlinks
	Rdev     string // devices: "major:minor"
	Target   string // symlinks
	Xattrs   map[string]string
	// Atime and Mtime are in nanoseconds since the epoch.
	Atime, Mtime int64
	// Extents are a file's data runs, [offset, end) from SEEK_DATA and
	// SEEK_HOLE; the rest is holes. Sum is the SHA-256 of those runs.
	Extents [][2]int64
	Sum     string
	// Link is, for an entry with more than one name, the first of the
	// names ReadTree found for its inode (sorted), so two trees compare
	// equal only when the same names share an inode.
	Link string
}

// ReadTree reads every entry under root ("." is root itself) without
// following a symlink or changing an atime: directories and files are
// opened with O_NOATIME (the owner or CAP_FOWNER), and a symlink's atime,
// which reading it updates, is set back (its ctime changes).
func ReadTree(t testing.TB, root string) map[string]TreeNode {
	t.Helper()
	nodes := map[string]TreeNode{}
	type inode struct{ dev, ino uint64 }
	names := map[inode][]string{}
	var walk func(rel string) error
	walk = func(rel string) error {
		p := filepath.Join(root, filepath.FromSlash(rel))
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n := TreeNode{
			Mode:  st.Mode & 0o7777,
			UID:   st.Uid,
			GID:   st.Gid,
			Atime: st.Atim.Nano(),
			Mtime: st.Mtim.Nano(),
		}
		xattrs, err := readXattrs(p)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		n.Xattrs = xattrs
		var children []string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			n.Type, n.Size = TypeFile, st.Size
			if n.Extents, n.Sum, err = readExtents(p, st.Size); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		case unix.S_IFDIR:
			n.Type = TypeDir
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NOATIME|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			f := os.NewFile(uintptr(fd), p)
			children, err = f.Readdirnames(-1)
			f.Close()
			if err != nil {
				return err
			}
			slices.Sort(children)
		case unix.S_IFLNK:
			n.Type, n.Size = TypeSymlink, st.Size
			if n.Target, err = os.Readlink(p); err != nil {
				return err
			}
			// readlink updates a symlink's atime (relatime), which no
			// flag prevents: put it back.
			ts := []unix.Timespec{unix.NsecToTimespec(n.Atime), {Nsec: unix.UTIME_OMIT}}
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
		case unix.S_IFCHR, unix.S_IFBLK:
			n.Type = TypeChar
			if st.Mode&unix.S_IFMT == unix.S_IFBLK {
				n.Type = TypeBlock
			}
			n.Rdev = fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		case unix.S_IFIFO:
			n.Type = TypeFifo
		case unix.S_IFSOCK:
			n.Type = TypeSocket
		}
		if n.Type != TypeDir && st.Nlink > 1 {
			id := inode{st.Dev, st.Ino}
			names[id] = append(names[id], rel)
		}
		nodes[rel] = n
		for _, c := range children {
			if err := walk(pathJoin(rel, c)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		t.Fatalf("ReadTree %s: %v", root, err)
	}
	for _, group := range names {
		slices.Sort(group)
		for _, rel := range group {
			n := nodes[rel]
			n.Link = group[0]
			nodes[rel] = n
		}
	}
	return nodes
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func readXattrs(p string) (map[string]string, error) {
	size, err := unix.Llistxattr(p, nil)
	if errors.Is(err, unix.EOPNOTSUPP) || size == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(p, buf); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name := range strings.SplitSeq(string(buf[:size]), "\x00") {
		if name == "" {
			continue
		}
		vsize, err := unix.Lgetxattr(p, name, nil)
		if err != nil {
			return nil, fmt.Errorf("getxattr %s: %w", name, err)
		}
		val := make([]byte, vsize)
		if vsize, err = unix.Lgetxattr(p, name, val); err != nil {
			return nil, fmt.Errorf("getxattr %s: %w", name, err)
		}
		out[name] = string(val[:vsize])
	}
	return out, nil
}

// readExtents lists the data runs of the file p of size bytes and hashes
// them, with their offsets.
func readExtents(p string, size int64) ([][2]int64, string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOATIME|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var runs [][2]int64
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil {
			return nil, "", err
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return nil, "", err
		}
		hole = min(hole, size)
		if data >= hole {
			break
		}
		runs = append(runs, [2]int64{data, hole})
		fmt.Fprintf(h, "%d:", data)
		for o := data; o < hole; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-o)], o)
			h.Write(buf[:n])
			o += int64(n)
			if err != nil {
				return nil, "", err
			}
		}
		off = hole
	}
	return runs, hex.EncodeToString(h.Sum(nil)), nil
}
