package idmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Placement is a directory to id-map into a process's namespaces, and
// where its mount goes.
type Placement struct {
	Dir, Target string
	// Writable leaves the mount writable (MountWritable); by default it
	// is read-only (Mount).
	Writable bool
}

// Place id-maps each placement's directory through the user namespace of
// process pid and attaches the mounts at their targets in its mount
// namespace: all of them, or (on error) none. It closes every descriptor
// it opened.
func Place(pid int, ps []Placement) error {
	if len(ps) == 0 {
		return nil
	}
	userns, err := UsernsFD(pid)
	if err != nil {
		return err
	}
	defer unix.Close(userns)
	fds := make([]int, 0, len(ps))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	targets := make([]string, len(ps))
	for i, p := range ps {
		mount := Mount
		if p.Writable {
			mount = MountWritable
		}
		fd, err := mount(p.Dir, userns)
		if err != nil {
			return fmt.Errorf("place %s: %w", p.Dir, err)
		}
		fds = append(fds, fd)
		targets[i] = p.Target
	}
	return Attach(pid, fds, targets)
}
