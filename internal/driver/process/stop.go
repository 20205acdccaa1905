package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/driver"
)

// teardownTimeout bounds a Stop or Destroy that was given no deadline.
const teardownTimeout = 30 * time.Second

// Stop ends every process of the sandbox and keeps its files.
func (d *Driver) Stop(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.killAll(ctx, st)
}

// Destroy ends every process and removes the sandbox's directory.
func (d *Driver) Destroy(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.teardown(ctx, st)
}

func (d *Driver) teardown(ctx context.Context, st state) error {
	if err := d.killAll(ctx, st); err != nil {
		return err
	}
	if err := removeAll(st.Dir); err != nil {
		return fmt.Errorf("remove sandbox directory: %w", err)
	}
	if d.uids != nil && st.UID != 0 {
		d.uids.release(st.UID)
	}
	return nil
}

// killAll asks the agent to end its process tree (SIGTERM), then kills
// whatever is left: every process of the sandbox's uid, or, when sandboxes
// share hutch's uid, every process of the agent's session.
func (d *Driver) killAll(ctx context.Context, st state) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, teardownTimeout)
		defer cancel()
	}
	if alive(st) {
		_ = syscall.Kill(st.Pid, syscall.SIGTERM)
		waitGone(ctx, st, 2*time.Second)
		if alive(st) {
			_ = syscall.Kill(st.Pid, syscall.SIGKILL)
		}
	}
	match := func(p procInfo) bool { return st.Pid != 0 && p.sid == st.Pid }
	if st.UID != 0 {
		match = func(p procInfo) bool { return p.uid == st.UID || (st.Pid != 0 && p.sid == st.Pid) }
	}
	for {
		left, err := killMatching(match)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d processes of the sandbox survived SIGKILL: %w", left, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitGone waits up to max for the agent to exit, woken by its pidfd the
// moment it does.
func waitGone(ctx context.Context, st state, max time.Duration) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < max {
		max = time.Until(d)
	}
	fd, err := unix.PidfdOpen(st.Pid, 0)
	if err != nil {
		return // already gone, or no pidfd: the kill loop copes
	}
	defer unix.Close(fd)
	if !alive(st) { // the pid may have been reused before the open
		return
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, int(max/time.Millisecond))
		if err != unix.EINTR {
			return
		}
	}
}

// removeAll removes dir even where the sandbox left directories it cannot
// write (chmod 000), without ever following a symlink.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if e != nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
