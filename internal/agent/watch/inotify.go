package watch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/base/dirent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// watchMask is what every watched directory reports. IN_MASK_CREATE makes
// a second watch of one directory (a bind mount of it further down) an
// error instead of a silent merge; IN_EXCL_UNLINK keeps quiet about files
// already unlinked but still open.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK | unix.IN_MASK_CREATE

// watchBeneath is how a directory below the watched one is opened:
// relative to the watched directory's fd, never above it, through no
// symlink at all and across no mount point. A directory swapped for a
// symlink is therefore not followed, and a recursive watch stays on its
// file system (like find -xdev).
const watchBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// watcher is one inotify instance over a directory of the sandbox and,
// when recursive, every directory below it on the same file system. One
// goroutine (run) reads the instance, keeps the directory map and feeds
// q; close ends it.
//
// A watch is never added by path: each directory is opened first (with
// watchBeneath, or with the sandbox root's RESOLVE_IN_ROOT for the
// watched one) and the watch is added through /proc/self/fd/<fd>, so a
// rename or symlink swap between the two steps cannot point it elsewhere.
//
// No fd stays open on the watched directory between events: an open fd
// holds its dentry, and the kernel reports IN_DELETE_SELF only when the
// last one goes, so the watch would never see its directory removed. To
// watch a new subdirectory the watched directory is opened again by its
// path and checked to be the same one.
type watcher struct {
	f         *os.File        // the inotify instance, non-blocking, in the Go poller
	rc        syscall.RawConn // f's fd, held open while a watch is added or removed
	root      *files.Root
	p         files.Path // the watched directory
	dev, ino  uint64     // and its identity
	recursive bool
	q         *watchQueue
	log       *slog.Logger
	closing   atomic.Bool
	done      chan struct{} // closed when run returns

	// The reader's own state.
	dirs     map[int]string // watch descriptor → directory, relative to the watched one
	wds      map[string]int // the reverse
	rootWD   int
	held     *heldMove // an IN_MOVED_FROM waiting for its IN_MOVED_TO
	deadline bool      // a read deadline is set for held
}

// heldMove is the first half of a rename.
type heldMove struct {
	cookie uint32
	path   string
	isDir  bool
	temp   bool // a name files.IsTempName knows: the files API putting a file in place
}

// openWatcher opens the directory p inside root and watches it (and with
// recursive, the tree below it) before returning, so every change after
// it returns is reported. Run it with run; close it with close.
func openWatcher(root *files.Root, p files.Path, recursive bool, log *slog.Logger) (*watcher, error) {
	rootfd, err := root.Open(p.Rel, unix.O_PATH, 0)
	if err != nil {
		return nil, files.Classify(err, p.Abs)
	}
	defer unix.Close(rootfd)
	var st unix.Stat_t
	if err := unix.Fstat(rootfd, &st); err != nil {
		return nil, files.Classify(err, p.Abs)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, errdefs.Invalid("not_a_directory", "%s is not a directory; watch a directory", p.Abs)
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if err == unix.EMFILE || err == unix.ENFILE || err == unix.ENOMEM {
			return nil, errdefs.Wrap(errdefs.ErrConflict, "watch_limit", err, "the sandbox has too many file watches open")
		}
		return nil, err
	}
	f := os.NewFile(uintptr(ifd), "inotify")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &watcher{
		f:         f,
		rc:        rc,
		root:      root,
		p:         p,
		dev:       st.Dev,
		ino:       st.Ino,
		recursive: recursive,
		q:         newWatchQueue(watchQueueMax, watchWindow),
		log:       log,
		done:      make(chan struct{}),
		dirs:      make(map[int]string),
		wds:       make(map[string]int),
	}
	wd, err := w.addWatch(rootfd)
	if err != nil {
		f.Close()
		if err == unix.ENOSPC {
			return nil, errdefs.Wrap(errdefs.ErrConflict, "watch_limit", err, "the sandbox's limit of watched directories is reached")
		}
		return nil, files.Classify(err, p.Abs)
	}
	w.rootWD = wd
	w.dirs[wd], w.wds["."] = ".", wd
	if recursive {
		w.walk(rootfd, ".", false, true)
	}
	return w, nil
}

// close ends the watch: run returns, and the instance is closed, with
// every watch.
func (w *watcher) close() {
	w.closing.Store(true)
	w.f.Close() // wakes run's read
	<-w.done
}

// errWatchMoved is the watched directory no longer at its path.
var errWatchMoved = errors.New("the watched directory moved")

// reopen opens the watched directory again (O_PATH) and checks it is the
// one watched.
func (w *watcher) reopen() (int, error) {
	fd, err := w.root.Open(w.p.Rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Dev != w.dev || st.Ino != w.ino {
		unix.Close(fd)
		return -1, errWatchMoved
	}
	return fd, nil
}

// run reads inotify records until the watch is closed or the watched
// directory is gone; then it closes the queue.
func (w *watcher) run() {
	defer close(w.done)
	defer w.q.close()
	// Room for many records; one is at most 16 bytes + NAME_MAX + 1.
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			// No IN_MOVED_TO followed: the move left the watch.
			w.flushHeld()
		case errors.Is(err, os.ErrClosed), err == io.EOF:
			return
		case err != nil:
			w.log.Warn("watch: read inotify", "path", w.p.Abs, "err", err)
			return
		case w.records(buf[:n]):
			return
		}
		switch {
		case w.held != nil && !w.deadline:
			w.f.SetReadDeadline(time.Now().Add(watchMoveWait))
			w.deadline = true
		case w.held == nil && w.deadline:
			w.f.SetReadDeadline(time.Time{})
			w.deadline = false
		}
	}
}

// records handles the inotify records in b and reports whether the watch
// is over (the watched directory is gone).
func (w *watcher) records(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int(int32(binary.NativeEndian.Uint32(b[0:])))
		mask := binary.NativeEndian.Uint32(b[4:])
		cookie := binary.NativeEndian.Uint32(b[8:])
		end := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
		if end > len(b) {
			w.log.Warn("watch: truncated inotify record", "path", w.p.Abs)
			return false
		}
		name := b[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[end:]
		if w.held != nil && (mask&unix.IN_MOVED_TO == 0 || cookie != w.held.cookie) {
			w.flushHeld()
		}
		if w.handle(wd, mask, cookie, string(name)) {
			return true
		}
	}
	return false
}

// handle turns one record into events and keeps the directory map; it
// reports whether the watch is over.
func (w *watcher) handle(wd int, mask, cookie uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.q.overflow()
		if w.recursive {
			// Directories made while records were lost have no watch yet.
			w.addTree(".", false, true)
		}
		return false
	}
	dir, ok := w.dirs[wd]
	if !ok {
		return false // a watch already dropped: its directory moved out
	}
	isDir := mask&unix.IN_ISDIR != 0
	switch {
	case mask&unix.IN_IGNORED != 0:
		w.forget(wd)
		return wd == w.rootWD
	case mask&unix.IN_DELETE_SELF != 0:
		if wd == w.rootWD {
			w.push(agentproto.WatchRemove, ".", "", true)
		}
		return false
	case name == "":
		return false
	}
	p := watchJoin(dir, name)
	if files.IsTempName(name) {
		// A file the files API is writing: its rename into place is
		// what the watch reports, as the create of its name.
		if mask&unix.IN_MOVED_FROM != 0 {
			w.held = &heldMove{cookie: cookie, path: p, isDir: isDir, temp: true}
		}
		return false
	}
	switch {
	case mask&unix.IN_CREATE != 0:
		w.push(agentproto.WatchCreate, p, "", isDir)
		if isDir && w.recursive {
			w.addTree(p, true, false)
		}
	case mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0:
		w.push(agentproto.WatchWrite, p, "", isDir)
	case mask&unix.IN_DELETE != 0:
		w.push(agentproto.WatchRemove, p, "", isDir)
	case mask&unix.IN_MOVED_FROM != 0:
		w.held = &heldMove{cookie: cookie, path: p, isDir: isDir}
	case mask&unix.IN_MOVED_TO != 0:
		if h := w.held; h != nil && h.cookie == cookie {
			w.held = nil
			if h.temp {
				w.push(agentproto.WatchCreate, p, "", isDir)
				return false
			}
			w.push(agentproto.WatchRename, p, h.path, isDir)
			if isDir {
				w.moveTree(h.path, p)
			}
			return false
		}
		w.push(agentproto.WatchCreate, p, "", isDir)
		if isDir && w.recursive {
			w.addTree(p, true, false)
		}
	}
	return false
}

// flushHeld reports a move whose other half never came as a remove: the
// path left the watch.
func (w *watcher) flushHeld() {
	h := w.held
	if h == nil {
		return
	}
	w.held = nil
	if h.temp {
		return // a write that never landed here: nothing was seen
	}
	w.push(agentproto.WatchRemove, h.path, "", h.isDir)
	if h.isDir {
		w.dropTree(h.path)
	}
}

func (w *watcher) push(typ, p, old string, isDir bool) {
	w.q.push(agentproto.WatchEvent{Type: typ, Path: p, OldPath: old, IsDir: isDir, Time: watchTime()})
}

// addTree watches the directory rel and the directories below it, as
// walk does, from the watched directory opened again. A watched directory
// that moved away can have no more subdirectories watched: rel gets an
// overflow event.
func (w *watcher) addTree(rel string, emit, rescan bool) {
	fd, err := w.reopen()
	if err != nil {
		w.log.Debug("watch: reopen the watched directory", "path", w.p.Abs, "err", err)
		w.push(agentproto.WatchOverflow, rel, "", true)
		return
	}
	defer unix.Close(fd)
	w.walk(fd, rel, emit, rescan)
}

// walk watches the directory rel and the directories below it, breadth
// first, all relative to the watched directory open as base. With emit,
// what it finds gets create events: the directory is new, and what
// appeared in it before its watch did would go unreported. With rescan,
// directories already watched are walked again, to find the ones below
// them that are not.
func (w *watcher) walk(base int, rel string, emit, rescan bool) {
	for queue := []string{rel}; len(queue) > 0 && !w.closing.Load(); {
		dir := queue[0]
		queue = queue[1:]
		queue = append(queue, w.addDir(base, dir, emit, rescan)...)
	}
}

// addDir watches the directory rel (unless it is) and returns its
// subdirectories to watch next. A directory that is gone, is no longer a
// directory, is a mount point or cannot be read is skipped: inotify could
// not watch it either.
func (w *watcher) addDir(base int, rel string, emit, rescan bool) []string {
	fd, err := files.Openat2(base, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: watchBeneath,
	})
	if err != nil {
		w.log.Debug("watch: directory skipped", "path", w.p.Abs, "dir", rel, "err", err)
		return nil
	}
	defer unix.Close(fd)
	known, isKnown := w.wds[rel]
	switch {
	case isKnown && rel == ".":
		// The watched directory: its watch is there from the start.
	case len(w.dirs) >= watchMaxDirs:
		w.push(agentproto.WatchOverflow, rel, "", true)
		return nil
	default:
		wd, err := w.addWatch(fd)
		switch {
		case err == unix.EEXIST:
			// Watched already: under this path (its parent's scan and the
			// kernel both announced it), or under another (a bind mount
			// of a directory into its own tree) and not walked twice.
			if !isKnown || !rescan {
				return nil
			}
		case err == unix.ENOSPC:
			w.push(agentproto.WatchOverflow, rel, "", true)
			return nil
		case err != nil:
			w.log.Debug("watch: directory not watched", "path", w.p.Abs, "dir", rel, "err", err)
			return nil
		default:
			if isKnown && known != wd {
				delete(w.dirs, known)
			}
			w.dirs[wd], w.wds[rel] = rel, wd
		}
	}
	names, err := dirent.Names(fd)
	if err != nil {
		w.log.Debug("watch: list directory", "path", w.p.Abs, "dir", rel, "err", err)
		return nil
	}
	sort.Strings(names)
	var subdirs []string
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed since the listing
		}
		p := watchJoin(rel, n)
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if emit {
			w.push(agentproto.WatchCreate, p, "", isDir)
		}
		if isDir {
			subdirs = append(subdirs, p)
		}
	}
	return subdirs
}

// addWatch watches the directory open as fd.
func (w *watcher) addWatch(fd int) (int, error) {
	var wd int
	var err error
	if cerr := w.rc.Control(func(ifd uintptr) {
		wd, err = unix.InotifyAddWatch(int(ifd), "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	}); cerr != nil {
		return -1, cerr
	}
	return wd, err
}

// forget drops a watch the kernel removed (IN_IGNORED).
func (w *watcher) forget(wd int) {
	p := w.dirs[wd]
	delete(w.dirs, wd)
	if w.wds[p] == wd {
		delete(w.wds, p)
	}
}

// moveTree renames the watched directories at and below from.
func (w *watcher) moveTree(from, to string) {
	moved := map[int]string{}
	for p, wd := range w.wds {
		if rest, ok := watchUnder(p, from); ok {
			moved[wd] = to + rest
			delete(w.wds, p)
		}
	}
	for wd, p := range moved {
		if old, ok := w.wds[p]; ok {
			// What the move replaced; its IN_IGNORED is on the way.
			delete(w.dirs, old)
		}
		w.dirs[wd], w.wds[p] = p, wd
	}
}

// dropTree removes the watches at and below p, a directory that moved out
// of the watch.
func (w *watcher) dropTree(p string) {
	for q, wd := range w.wds {
		if _, ok := watchUnder(q, p); ok {
			delete(w.wds, q)
			delete(w.dirs, wd)
			w.rc.Control(func(ifd uintptr) { unix.InotifyRmWatch(int(ifd), uint32(wd)) })
		}
	}
}

// watchUnder reports whether p is dir or below it, and what follows dir.
func watchUnder(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir):], true
	}
	return "", false
}

// watchJoin is name in dir, both relative to the watched directory.
func watchJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
