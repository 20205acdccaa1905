package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/agent/manifest"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// fileKey tells one version of the manifest file from another without
// reading it: a write changes its size or times, a rename over it its
// inode. The zero key is a file that is not there.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
}

func keyOf(st *unix.Stat_t) fileKey {
	return fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// openManifest opens the manifest in the app directory dir (a sandbox
// path) through the sandbox root, so no link leads the agent outside it.
// It returns the open file and its key, or why it cannot be read; the
// key is the file's even then, when there is one.
func (sv *Supervisor) openManifest(dir string) (*os.File, fileKey, *agentproto.ManifestError) {
	abs := path.Join(dir, manifest.FileName)
	p, err := sv.root.Resolve(abs)
	if err != nil {
		return nil, fileKey{}, &agentproto.ManifestError{Code: agentproto.ManifestUnreadable, Message: errMessage(err)}
	}
	// O_NONBLOCK: a FIFO in its place must not hang the supervisor.
	fd, err := sv.root.Open(p.Rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, fileKey{}, &agentproto.ManifestError{Code: agentproto.ManifestMissing, Message: fmt.Sprintf("%s does not exist", abs)}
	}
	if err != nil {
		return nil, fileKey{}, &agentproto.ManifestError{Code: agentproto.ManifestUnreadable, Message: errMessage(files.Classify(err, abs))}
	}
	f := os.NewFile(uintptr(fd), abs)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fileKey{}, &agentproto.ManifestError{Code: agentproto.ManifestUnreadable, Message: errMessage(files.Classify(err, abs))}
	}
	key := keyOf(&st)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Close()
		return nil, key, &agentproto.ManifestError{Code: agentproto.ManifestUnreadable, Message: fmt.Sprintf("%s is not a regular file", abs)}
	case st.Size > manifest.MaxBytes:
		f.Close()
		return nil, key, &agentproto.ManifestError{Code: agentproto.ManifestTooLarge,
			Message: fmt.Sprintf("%s is %d bytes; the limit is %d", abs, st.Size, manifest.MaxBytes)}
	}
	return f, key, nil
}

// readManifest reads and parses the manifest in dir. On any problem the
// manifest is nil and the error says why, for the app's owner.
func (sv *Supervisor) readManifest(dir string) (*manifest.Manifest, fileKey, *agentproto.ManifestError) {
	f, key, merr := sv.openManifest(dir)
	if merr != nil {
		return nil, key, merr
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, manifest.MaxBytes+1))
	if err != nil {
		return nil, key, &agentproto.ManifestError{Code: agentproto.ManifestUnreadable, Message: errMessage(files.Classify(err, f.Name()))}
	}
	m, err := manifest.Parse(b)
	if err != nil {
		merr := &agentproto.ManifestError{Code: agentproto.ManifestInvalid, Message: err.Error()}
		var perr *manifest.Error
		if errors.As(err, &perr) {
			merr.Problems = perr.Problems
		}
		return nil, key, merr
	}
	return m, key, nil
}

// manifestKey is the key of the manifest in dir as it is now.
func (sv *Supervisor) manifestKey(dir string) fileKey {
	f, key, _ := sv.openManifest(dir)
	if f != nil {
		f.Close()
	}
	return key
}

// errMessage is the part of err safe to show.
func errMessage(err error) string {
	_, _, msg := errdefs.HTTPStatus(err)
	return msg
}

// poll looks at the manifest file every timing.Poll and reloads when it
// changed, until stop is closed. The supervisor owns it (sv.wg).
func (sv *Supervisor) poll(stop <-chan struct{}) {
	defer sv.wg.Done()
	t := time.NewTicker(sv.timing.Poll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !sv.pollOnce(stop) {
			return
		}
	}
}

// pollOnce reloads when the manifest file changed since it was last read;
// it reports false once the poller is to end.
func (sv *Supervisor) pollOnce(stop <-chan struct{}) bool {
	sv.ctl.Lock()
	defer sv.ctl.Unlock()
	select {
	case <-stop:
		return false
	default:
	}
	if sv.manifestKey(sv.cfg.Dir) != sv.seen {
		sv.reload(reloadFileChanged)
	}
	return true
}
