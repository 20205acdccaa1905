package hostproc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// WaitGone waits up to max (and no longer than ctx allows) for the process
// recorded as pid and startTime to exit, woken by its pidfd the moment it
// does. It returns early when the process is already gone.
func WaitGone(ctx context.Context, pid int, startTime uint64, max time.Duration) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < max {
		max = time.Until(d)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone, or no pidfd: callers poll after this
	}
	defer unix.Close(fd)
	if !Alive(pid, startTime) { // the pid may have been reused before the open
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
