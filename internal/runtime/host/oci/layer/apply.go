package layer

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/sparse"
)

// applier applies one layer's entries below the root's descriptor.
type applier struct {
	ctx      context.Context
	opts     Options
	root     int    // O_PATH
	rootPath string // the root's path as /proc shows it; asked for lazily
	lowers   []int  // Options.Lower, O_PATH
	stats    Stats
	bytes    int64 // file sizes so far, holes included

	// privileged callers (euid 0) need no mode bent to write; others get
	// u+rwx on the directories they write in, given back at the end.
	privileged bool
	euid       int

	// names holds the paths remembered: in Flatten, what this layer made,
	// replaced or entered (with their ancestors), what an opaque directory
	// keeps; in both modes, where the directories to finish are.
	names *names
	// opaqued: the directories already cleared.
	opaqued map[int32]struct{}
	// dirs are the directories whose mode or times are set at the end,
	// once nothing more is written in them.
	dirs map[fileID]*pendingDir
	// made counts the directories made that no entry described; with the
	// entries, they are bounded by MaxEntries.
	made int
	// copier's buffers serve every file's copy (holes kept).
	copier sparse.Copier
}

type pendingDir struct {
	node    int32 // in names
	mode    uint32
	setMode bool
	mtime   *unix.Timespec // nil: leave the times
	atime   unix.Timespec
}

func newApplier(ctx context.Context, rootfd int, opts Options) (*applier, error) {
	a := &applier{
		ctx: ctx, opts: opts, root: rootfd,
		euid:    os.Geteuid(),
		names:   newNames(),
		opaqued: map[int32]struct{}{},
		dirs:    map[fileID]*pendingDir{},
	}
	a.privileged = a.euid == 0
	for _, l := range opts.Lower {
		fd, err := unix.Open(l, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			a.close()
			return nil, ioError(err, l)
		}
		a.lowers = append(a.lowers, fd)
	}
	return a, nil
}

func (a *applier) close() {
	for _, fd := range a.lowers {
		unix.Close(fd)
	}
}

// entry applies one tar entry; body is its content.
func (a *applier) entry(hdr *tar.Header, body io.Reader) error {
	a.stats.Entries++
	if a.stats.Entries > a.opts.MaxEntries {
		return errdefs.New(errdefs.ErrTooLarge, CodeTooManyEntries, "the layer has more than %d entries, the most a layer may have", a.opts.MaxEntries)
	}
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	rel, err := entryName(hdr.Name)
	if err != nil {
		return err
	}
	if dir, base := splitRel(rel); rel != "." && strings.HasPrefix(base, whiteoutPrefix) {
		return a.whiteout(hdr.Name, dir, base)
	}
	if rel == "." && hdr.Typeflag != tar.TypeDir {
		return errdefs.Invalid(CodeInvalidTar, "layer entry %q names the root but is not a directory", hdr.Name)
	}
	var err2 error
	switch hdr.Typeflag {
	case tar.TypeDir:
		err2 = a.dir(rel, hdr)
	case tar.TypeReg, tar.TypeGNUSparse, '\x00':
		err2 = a.regular(rel, hdr, body)
	case tar.TypeSymlink:
		err2 = a.symlink(rel, hdr)
	case tar.TypeLink:
		err2 = a.hardlink(rel, hdr)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		err2 = a.special(hdr)
	default:
		err2 = errdefs.Invalid(CodeUnsupportedEntry, "layer entry %q is of tar type %q, which a layer may not hold", trunc(hdr.Name), string(hdr.Typeflag))
	}
	if err2 != nil {
		return ioError(err2, hdr.Name)
	}
	return nil
}

// dir applies a directory entry: made when missing, replacing what is
// not a directory, merged with one that is. The root keeps its own
// attributes, as containerd's does.
func (a *applier) dir(rel string, hdr *tar.Header) error {
	if rel == "." {
		return nil
	}
	fd, phys, err := a.ensureDir(rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := a.chown(fd, "", hdr, unix.AT_EMPTY_PATH); err != nil {
		return err
	}
	if err := a.xattrsDir(fd, hdr); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	mode, cleared := sanitize(hdr.Mode, true)
	if cleared {
		a.stats.SetuidCleared++
	}
	mt := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	node, _ := a.names.lookup(phys, true)
	a.dirs[idOf(&st)] = &pendingDir{node: node, mode: mode, setMode: true, mtime: &mt, atime: atimeOf(hdr)}
	a.stats.Dirs++
	return nil
}

// ensureDir makes rel a directory (replacing what else stands there, never
// following it) and opens it O_PATH.
func (a *applier) ensureDir(rel string) (int, string, error) {
	pfd, pphys, name, err := a.parent(rel)
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(pfd)
	phys := joinRel(pphys, name)
	st, err := lstatAt(pfd, name)
	switch {
	case err == nil && isDir(&st):
		if err := a.fixMode(pfd, name, phys, &st); err != nil {
			return -1, "", err
		}
	case err == nil:
		wasWhiteout := isWhiteout(&st)
		if err := a.writable(pfd, pphys); err != nil {
			return -1, "", err
		}
		if err := a.removeAt(pfd, name); err != nil {
			return -1, "", err
		}
		fd, err := a.mkdir(pfd, pphys, name, phys, false)
		if err != nil {
			return -1, "", err
		}
		a.mark(phys)
		// In a layer of its own, a directory where this layer had
		// whited out hides what is below: overlayfs's rmdir then mkdir.
		if wasWhiteout && a.opts.Mode == Layer {
			if err := a.markOpaque(fd, "", phys); err != nil {
				unix.Close(fd)
				return -1, "", err
			}
		}
		return fd, phys, nil
	case isNotExist(err):
		fd, err := a.mkdir(pfd, pphys, name, phys, false)
		if err == nil {
			a.mark(phys)
		}
		return fd, phys, err
	default:
		return -1, "", err
	}
	fd, err := openat2(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
	if err != nil {
		return -1, "", err
	}
	a.mark(phys)
	return fd, phys, nil
}

// mkdir makes name (physical path phys) in dirfd (at dirPhys) and opens
// it O_PATH. It is made as a directory the layer did not describe: 0755
// and the layer's root as owner, or, in Layer mode, what the layers below
// give the same path; a directory entry then overrides both. implicit
// counts it against MaxEntries.
func (a *applier) mkdir(dirfd int, dirPhys, name, phys string, implicit bool) (int, error) {
	if implicit {
		a.made++
		if a.stats.Entries+a.made > a.opts.MaxEntries {
			return -1, errdefs.New(errdefs.ErrTooLarge, CodeTooManyEntries, "the layer makes more than %d files and directories, the most a layer may", a.opts.MaxEntries)
		}
	}
	if err := a.writable(dirfd, dirPhys); err != nil {
		return -1, err
	}
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil {
		return -1, err
	}
	fd, err := openat2(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, exact)
	if err != nil {
		return -1, err
	}
	if err := a.implicitAttrs(fd, phys); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// Marked by the caller, which marks the deepest path it made: one
	// walk of the names, not one per level.
	return fd, nil
}

// implicitAttrs gives fd, a directory just made at phys, its mode and
// owner. A mode without u+rwx waits for the end when the caller needs
// them to write below.
func (a *applier) implicitAttrs(fd int, phys string) error {
	mode, uid, gid, chown := uint32(0o755), 0, 0, a.opts.Owner != nil
	if chown {
		var err error
		if uid, gid, err = a.opts.Owner(0, 0); err != nil {
			return errdefs.Wrap(errdefs.ErrInvalid, CodeOwner, err, "the layer's root ids cannot be mapped")
		}
	}
	if a.opts.Mode == Layer {
		if st, found := a.lowerDir(phys); found {
			mode, uid, gid = st.Mode&0o7777, int(st.Uid), int(st.Gid)
			chown = chown || a.privileged
		}
	}
	if chown {
		if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
			return err
		}
	}
	if a.privileged || mode&0o700 == 0o700 {
		return fchmodFd(fd, mode)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	node, _ := a.names.lookup(phys, true)
	a.dirs[idOf(&st)] = &pendingDir{node: node, mode: mode, setMode: true}
	return nil
}

// regular writes a file under a new name, then renames it into place.
func (a *applier) regular(rel string, hdr *tar.Header, body io.Reader) (retErr error) {
	if hdr.Size > a.opts.MaxBytes-a.bytes {
		return errdefs.New(errdefs.ErrTooLarge, CodeTooLarge, "the layer's files add up to more than %d bytes (holes of sparse files count), the most a layer may unpack", a.opts.MaxBytes)
	}
	a.bytes += hdr.Size
	pfd, pphys, name, err := a.writableParent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd := -1
	at, err := create(pfd, name, func(n string) (err error) {
		fd, err = unix.Openat(pfd, n, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), at)
	defer func() {
		f.Close()
		if retErr != nil {
			unix.Unlinkat(pfd, at, 0)
		}
	}()
	n, err := a.copier.Copy(a.ctx, f, body)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return errdefs.Invalid(CodeInvalidTar, "layer entry %q holds %d bytes, not the %d its header says", trunc(hdr.Name), n, hdr.Size)
	}
	if err := a.chown(fd, "", hdr, unix.AT_EMPTY_PATH); err != nil {
		return err
	}
	mode, cleared := sanitize(hdr.Mode, false)
	if cleared {
		a.stats.SetuidCleared++
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	a.xattrsFile(fd, a.xattrs(hdr))
	if err := f.Close(); err != nil {
		return err
	}
	if err := a.place(pfd, at, pphys, name, hdr); err != nil {
		return err
	}
	a.stats.Files++
	a.stats.Bytes += hdr.Size
	return nil
}

// symlink makes a symlink under a new name, then renames it into place.
// Its target is kept as the layer says: it is resolved only inside the
// sandbox, and by this package only inside the root.
func (a *applier) symlink(rel string, hdr *tar.Header) (retErr error) {
	target := hdr.Linkname
	switch {
	case target == "" || strings.IndexByte(target, 0) >= 0:
		return errdefs.Invalid(CodeInvalidTar, "symlink %q has an empty target", trunc(hdr.Name))
	case len(target) >= maxPath:
		return errdefs.Invalid(CodeNameTooLong, "symlink %q has a target over %d bytes", trunc(hdr.Name), maxPath-1)
	}
	pfd, pphys, name, err := a.writableParent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	at, err := create(pfd, name, func(n string) error { return unix.Symlinkat(target, pfd, n) })
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			unix.Unlinkat(pfd, at, 0)
		}
	}()
	if err := a.chown(pfd, at, hdr, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if err := a.place(pfd, at, pphys, name, hdr); err != nil {
		return err
	}
	a.stats.Symlinks++
	return nil
}

// hardlink links rel to a file already in the root (in Layer mode, in
// this layer). The target's name is checked like an entry's and resolved
// inside the root; its final name is not followed, and it must be a
// regular file or a symlink: never a directory, a device or a whiteout.
func (a *applier) hardlink(rel string, hdr *tar.Header) (retErr error) {
	trel, err := entryName(hdr.Linkname)
	if err != nil {
		return err
	}
	if trel == "." {
		return errdefs.Invalid(CodeHardlinkInvalid, "hard link %q points at the root", trunc(hdr.Name))
	}
	tdir, tname := splitRel(trel)
	tfd, _, err := a.openDir(tdir, false)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, CodeHardlinkInvalid, err, "hard link %q points at %q, which is not in the layer", trunc(hdr.Name), trunc(hdr.Linkname))
	}
	defer unix.Close(tfd)
	st, err := lstatAt(tfd, tname)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, CodeHardlinkInvalid, err, "hard link %q points at %q, which is not in the layer", trunc(hdr.Name), trunc(hdr.Linkname))
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFLNK {
		return errdefs.Invalid(CodeHardlinkInvalid, "hard link %q points at %q, which is not a file", trunc(hdr.Name), trunc(hdr.Linkname))
	}
	pfd, pphys, name, err := a.writableParent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	at, err := create(pfd, name, func(n string) error { return unix.Linkat(tfd, tname, pfd, n, 0) })
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil && at != name {
			unix.Unlinkat(pfd, at, 0)
		}
	}()
	if err := a.replace(pfd, at, name); err != nil {
		return err
	}
	a.mark(joinRel(pphys, name))
	a.stats.Hardlinks++
	return nil
}

// special handles device nodes and FIFOs: never made. A sandbox gets its
// /dev from hutch, and a device node from an image would be a door to
// the host's hardware.
func (a *applier) special(hdr *tar.Header) error {
	kind := "device"
	if hdr.Typeflag == tar.TypeFifo {
		kind = "fifo"
	}
	if a.opts.RefuseDevices {
		return errdefs.Invalid(CodeDeviceRefused, "layer entry %q is a %s, which a sandbox image may not hold", trunc(hdr.Name), kind)
	}
	a.skip(hdr.Name, kind)
	return nil
}

func (a *applier) skip(name, reason string) {
	a.stats.SkippedTotal++
	if len(a.stats.Skipped) < maxSkipList {
		a.stats.Skipped = append(a.stats.Skipped, Skip{Name: trunc(name), Reason: reason})
	}
}

// mark records phys and its ancestors as this layer's (Flatten only:
// only an opaque directory asks).
func (a *applier) mark(phys string) {
	if a.opts.Mode == Flatten {
		a.names.markOurs(phys)
	}
}

// place gives the entry made under the temporary name at its times, renames
// it over name in pfd and marks it as this layer's.
func (a *applier) place(pfd int, at, pphys, name string, hdr *tar.Header) error {
	if err := setTimes(pfd, at, hdr); err != nil {
		return err
	}
	if err := a.replace(pfd, at, name); err != nil {
		return err
	}
	a.mark(joinRel(pphys, name))
	return nil
}

// writableParent opens rel's parent as parent does and checks this layer
// may write in it; the caller closes the descriptor.
func (a *applier) writableParent(rel string) (int, string, string, error) {
	pfd, pphys, name, err := a.parent(rel)
	if err != nil {
		return -1, "", "", err
	}
	if err := a.writable(pfd, pphys); err != nil {
		unix.Close(pfd)
		return -1, "", "", err
	}
	return pfd, pphys, name, nil
}
