package nsinit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// bindVolumes binds each of binds (a volume's directory, relative to the
// sandbox's directory) at its target inside the root mounted at rootfs,
// making the target's missing directories first. Every component is
// resolved inside the root (RESOLVE_IN_ROOT), so a link the sandbox made
// in its files leads nowhere outside it.
func bindVolumes(rootfs string, binds []Bind) error {
	if len(binds) == 0 {
		return nil
	}
	root, err := unix.Open(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("nsinit: open the root: %w", err)
	}
	defer unix.Close(root)
	for _, b := range binds {
		dir, err := mkdirInRoot(root, strings.TrimPrefix(b.Target, "/"))
		if err != nil {
			return fmt.Errorf("nsinit: the mount point of volume at %s: %w", b.Target, err)
		}
		err = unix.Mount(b.Source, "/proc/self/fd/"+strconv.Itoa(dir), "", unix.MS_BIND|unix.MS_REC, "")
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("nsinit: mount the volume at %s: %w", b.Target, err)
		}
		// The descriptor names the directory under the new mount; the
		// remount needs the mount itself, found again the same way.
		if dir, err = openInRoot(root, strings.TrimPrefix(b.Target, "/")); err != nil {
			return fmt.Errorf("nsinit: the volume at %s: %w", b.Target, err)
		}
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
		if b.ReadOnly {
			flags |= unix.MS_RDONLY
		}
		err = unix.Mount("", "/proc/self/fd/"+strconv.Itoa(dir), "", flags, "")
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("nsinit: make the volume at %s nosuid, nodev (read-only: %v): %w", b.Target, b.ReadOnly, err)
		}
	}
	return nil
}

// inRoot opens directories resolved inside the root: no link leads out
// of it, and no magic link anywhere.
var inRoot = unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
	Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}

// openInRoot opens the directory rel under root (O_PATH).
func openInRoot(root int, rel string) (int, error) {
	how := inRoot
	return unix.Openat2(root, rel, &how)
}

// mkdirInRoot opens rel under root as a directory (O_PATH), making what is
// missing of it (0755), resolving every component inside root.
func mkdirInRoot(root int, rel string) (int, error) {
	how := inRoot
	dir, err := unix.Openat2(root, ".", &how)
	if err != nil {
		return -1, err
	}
	for _, name := range strings.Split(rel, "/") {
		err := unix.Mkdirat(dir, name, 0o755)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(dir)
			return -1, err
		}
		next, err := unix.Openat2(dir, name, &how)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	return dir, nil
}
