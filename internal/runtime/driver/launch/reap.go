package launch

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reaping an agent. os/exec's Wait holds an OS thread in waitid(2) until
// the process exits; an agent lives as long as its sandbox, so a thread
// per sandbox would sit blocked, thousands of them on a full host (each
// with its stacks, and each another task for the scheduler). Instead the
// agent is started with a pidfd, which the runtime's poller watches like
// a socket: it becomes readable when the process exits, and only then
// does a goroutine reap it.

// askPidfd has cmd's start return a pidfd of the new process into *fd
// (left -1 on a kernel without pidfds).
func askPidfd(cmd *exec.Cmd, fd *int) {
	*fd = -1
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.PidFD = fd
}

// reapLater reaps cmd's process once it exits, in the background; pidfd
// is the one askPidfd got, which reapLater owns.
func reapLater(cmd *exec.Cmd, pidfd int) {
	if pidfd < 0 {
		go func() { _ = cmd.Wait() }()
		return
	}
	// The reaping below is this pidfd's; cmd's own handle is not needed.
	_ = cmd.Process.Release()
	reapPidfd(pidfd)
}

// reapChild reaps pid, a child of this process that no exec.Cmd holds
// (an agent its first stage started as this process's child), once it
// exits. A child cannot be reaped by anyone else, so its pid names it
// until then, an exited one included. Of a process that is not this
// one's child (the stage of an older agent binary orphans the agent),
// nothing is reaped. A child the stage started but could not execute
// (its exec or id mapping failed) is this process's too, and its pid is
// never reported: it stays a zombie until this process exits, one per
// such failure.
func reapChild(pid int) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// No pidfds on this kernel: a thread waits, as os/exec's would.
		go func() {
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
					return
				}
			}
		}()
		return
	}
	reapPidfd(pidfd)
}

// reapPidfd reaps the process of pidfd, which it owns, once it exits.
func reapPidfd(pidfd int) {
	if err := unix.SetNonblock(pidfd, true); err != nil {
		go waitBlocking(pidfd)
		return
	}
	f := os.NewFile(uintptr(pidfd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	go func() {
		defer f.Close()
		_ = rc.Read(func(fd uintptr) bool {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG, nil)
			// EAGAIN (the pidfd is non-blocking) or no signal yet: not
			// exited, wait for the pidfd to become readable; reaped or
			// failed (ECHILD: not this process's child) ends the wait.
			return err != unix.EAGAIN && (err != nil || info.Signo != 0)
		})
	}()
}

// waitBlocking reaps the process of pidfd, holding a thread until it
// exits: the fallback when the pidfd cannot be polled.
func waitBlocking(pidfd int) {
	defer unix.Close(pidfd)
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED, nil); err != unix.EINTR {
			return
		}
	}
}
