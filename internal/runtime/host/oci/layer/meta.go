package layer

import (
	"archive/tar"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// sanitize turns a tar mode into the mode to give: permission bits, and
// on a directory the setgid and sticky bits (which grant nothing);
// setuid and setgid on anything else are cleared, and cleared says so.
func sanitize(mode int64, dir bool) (m uint32, cleared bool) {
	m = uint32(mode) & 0o777
	special := uint32(mode) & (unix.S_ISUID | unix.S_ISGID | unix.S_ISVTX)
	if dir {
		return m | special&(unix.S_ISGID|unix.S_ISVTX), special&unix.S_ISUID != 0
	}
	return m, special&(unix.S_ISUID|unix.S_ISGID) != 0
}

// chown gives name in dirfd (flags: AT_EMPTY_PATH for dirfd itself,
// AT_SYMLINK_NOFOLLOW for a name) the owner Options.Owner maps the
// entry's ids to; without Owner, nothing.
func (a *applier) chown(dirfd int, name string, hdr *tar.Header, flags int) error {
	if a.opts.Owner == nil {
		return nil
	}
	uid, gid, err := a.opts.Owner(hdr.Uid, hdr.Gid)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, CodeOwner, err, "layer entry %q is owned by %d:%d, which cannot be mapped", trunc(hdr.Name), hdr.Uid, hdr.Gid)
	}
	return unix.Fchownat(dirfd, name, uid, gid, flags)
}

// xattrs returns the entry's xattrs to apply: user.* but user.overlay.*,
// when Options.Xattrs; the others are counted as dropped.
func (a *applier) xattrs(hdr *tar.Header) map[string]string {
	var keep map[string]string
	for k, v := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(k, "SCHILY.xattr.")
		if !ok {
			continue
		}
		if !a.opts.Xattrs || !strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "user.overlay.") {
			a.stats.XattrsDropped++
			continue
		}
		if keep == nil {
			keep = map[string]string{}
		}
		keep[name] = v
	}
	return keep
}

// xattrsFile applies the entry's xattrs to fd, open for writing; the file
// system's refusals are counted, not fatal.
func (a *applier) xattrsFile(fd int, x map[string]string) {
	for k, v := range x {
		if err := unix.Fsetxattr(fd, k, []byte(v), 0); err != nil {
			a.stats.XattrsDropped++
		}
	}
}

// xattrsDir applies the entry's xattrs to the directory fd (O_PATH).
func (a *applier) xattrsDir(fd int, hdr *tar.Header) error {
	x := a.xattrs(hdr)
	if len(x) == 0 {
		return nil
	}
	d, err := openat2(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, exact)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	a.xattrsFile(d, x)
	return nil
}

// setTimes gives name in dirfd the entry's times, not following it.
func setTimes(dirfd int, name string, hdr *tar.Header) error {
	ts := []unix.Timespec{atimeOf(hdr), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func atimeOf(hdr *tar.Header) unix.Timespec {
	if hdr.AccessTime.IsZero() {
		return unix.NsecToTimespec(hdr.ModTime.UnixNano())
	}
	return unix.NsecToTimespec(hdr.AccessTime.UnixNano())
}

// writable lets an unprivileged caller write in the directory fd (O_PATH,
// at phys): a directory it owns without u+rwx (a layer below made it
// 0555) gets them until the end, when its mode is given back.
func (a *applier) writable(fd int, phys string) error {
	if a.privileged {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	return a.bend(fd, phys, &st)
}

// fixMode is writable for name in dirfd, a directory, by name.
func (a *applier) fixMode(dirfd int, name, phys string, st *unix.Stat_t) error {
	if a.privileged || st.Mode&0o700 == 0o700 || int(st.Uid) != a.euid {
		return nil
	}
	fd, err := openat2(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return a.bend(fd, phys, st)
}

func (a *applier) bend(fd int, phys string, st *unix.Stat_t) error {
	if st.Mode&0o700 == 0o700 || int(st.Uid) != a.euid {
		return nil
	}
	if err := fchmodFd(fd, st.Mode&0o7777|0o700); err != nil {
		return err
	}
	if _, ok := a.dirs[idOf(st)]; !ok {
		node, _ := a.names.lookup(phys, true)
		a.dirs[idOf(st)] = &pendingDir{node: node, mode: st.Mode & 0o7777, setMode: true}
	}
	return nil
}

// finish gives the directories their modes and times, deepest first, so
// a directory made read-only did not stop what was written in it. A
// directory that is gone, or is another file now, is left alone.
func (a *applier) finish() error {
	type todo struct {
		id    fileID
		d     *pendingDir
		rel   string
		depth int
	}
	dirs := make([]todo, 0, len(a.dirs))
	for id, d := range a.dirs {
		rel := a.names.path(d.node)
		dirs = append(dirs, todo{id, d, rel, strings.Count(rel, "/")})
	}
	sort.Slice(dirs, func(i, j int) bool {
		if dirs[i].depth != dirs[j].depth {
			return dirs[i].depth > dirs[j].depth
		}
		return dirs[i].rel < dirs[j].rel
	})
	for _, x := range dirs {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		if err := a.finishDir(x.id, x.rel, x.d); err != nil {
			return ioError(err, x.rel)
		}
	}
	return nil
}

func (a *applier) finishDir(id fileID, rel string, d *pendingDir) error {
	dir, name := splitRel(rel)
	if rel == "." {
		dir, name = ".", "."
	}
	pfd, err := openat2(a.root, dir, unix.O_PATH|unix.O_DIRECTORY, exact)
	if err != nil {
		return nil // replaced or removed since
	}
	defer unix.Close(pfd)
	fd, err := openat2(pfd, name, unix.O_PATH|unix.O_NOFOLLOW, exact)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || idOf(&st) != id || !isDir(&st) {
		return nil
	}
	if d.setMode {
		if err := fchmodFd(fd, d.mode); err != nil {
			return err
		}
	}
	if d.mtime == nil {
		return nil
	}
	return unix.UtimesNanoAt(pfd, name, []unix.Timespec{d.atime, *d.mtime}, unix.AT_SYMLINK_NOFOLLOW)
}

// lowerDir finds phys in the layers below (Options.Lower, nearest first)
// as overlayfs would show it: the first layer holding it decides, and a
// whiteout, a file, or an opaque directory above it hides the rest.
func (a *applier) lowerDir(phys string) (unix.Stat_t, bool) {
	for _, l := range a.lowers {
		fd, err := openat2(l, phys, unix.O_PATH|unix.O_NOFOLLOW, exact)
		if err == nil {
			var st unix.Stat_t
			err = unix.Fstat(fd, &st)
			unix.Close(fd)
			return st, err == nil && isDir(&st)
		}
		if err != unix.ENOENT || hidesBelow(l, phys) {
			return unix.Stat_t{}, false
		}
	}
	return unix.Stat_t{}, false
}

// hidesBelow reports whether the layer l, which lacks phys, hides it in
// the layers below: an ancestor is opaque or is not a directory.
func hidesBelow(l int, phys string) bool {
	for dir := phys; dir != "."; {
		dir, _ = splitRel(dir)
		fd, err := openat2(l, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
		if err != nil {
			if err != unix.ENOENT {
				return true
			}
			continue
		}
		var v [1]byte
		n, err := unix.Fgetxattr(fd, opaqueXattr, v[:])
		unix.Close(fd)
		if err == nil && n == 1 && v[0] == 'y' {
			return true
		}
	}
	return false
}
