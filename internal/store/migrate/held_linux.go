package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// shmDMS is the byte of a WAL database's -shm file on which every
// connection that has the database open holds a read lock for as long
// as it does (SQLite's os_unix.c, UNIX_SHM_DMS: (22+8)*4 + 8), so that
// the first to open it knows it is the first.
const shmDMS = 128

// checkNotHeld fails when some process has the database at path open,
// as a running hutch serve does from its start to its end (its writer's
// connection stays open): its writes after the copy's moment would be
// lost. It asks whether a write lock on the -shm file's DMS byte could
// be taken, and takes none. An open file description lock conflicts
// with SQLite's process-owned locks even in this process, but closing
// the file here drops those of this process's own connections to it, so
// call it before this process opens the database.
func checkNotHeld(path string) error {
	f, err := os.Open(path + "-shm")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no -shm: no connection has the database open
	}
	if err != nil {
		return fmt.Errorf("check whether %s is in use: %w", path, err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return fmt.Errorf("check whether %s is in use: %w", path, err)
	}
	if lk.Type != unix.F_UNLCK {
		return errdefs.Conflict("source_in_use", "%s is open in another process (a running hutch serve?): stop it first, so that nothing is written after the copy", path)
	}
	return nil
}
