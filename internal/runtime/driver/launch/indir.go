package launch

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/osthread"
)

// InDir runs start on an OS thread of its own whose working directory is
// dir, so that a child start forks begins there: a child whose
// credentials could not look dir up by path (a sandbox's user, below a
// home that is 0700) still starts inside it, and a child that enters a
// new mount namespace finds its working directory carried over. The
// thread unshares its filesystem attributes first, so the process's own
// working directory never moves, and it is discarded afterwards.
func InDir(dir string, start func() error) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return osthread.Discarded(func() error {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return fmt.Errorf("unshare the thread's working directory: %w", err)
		}
		if err := unix.Fchdir(fd); err != nil {
			return fmt.Errorf("enter %s: %w", dir, err)
		}
		return start()
	})
}
