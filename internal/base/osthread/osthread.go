// Package osthread ties work to OS threads: a function run on a thread
// that is then thrown away, for work that changes what a thread is (a
// namespace entered with setns, filesystem attributes unshared) and must
// not leak into the rest of the process; and a child started from a
// thread that lives as long as it, for a Pdeathsig that fires only when
// this process dies.
package osthread

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Discarded runs fn on an OS thread of its own that is not the process's
// main thread, locked to it and never handed back, and returns fn's
// error: Go ends the thread when fn's goroutine exits. The main thread
// must never be the one: it is what /proc/self shows (the process's
// mountinfo, working directory and namespaces), and Go does not end it
// when a goroutine locked to it exits, as it ends any other thread, but
// keeps it, changed.
func Discarded(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Holding the main thread while another goroutine does the
			// work keeps that goroutine off it; this one leaves it as it
			// found it.
			done <- Discarded(fn)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread ends with this goroutine.
		done <- fn()
	}()
	return <-done
}

// StartTied starts cmd from a goroutine locked to its thread, which lives
// until cmd exits: a Pdeathsig fires when the thread that started the
// process ends, so the process dies with this one but not before its
// time. done closes once cmd has exited.
func StartTied(cmd *exec.Cmd) (done <-chan struct{}, err error) {
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(exited)
	}()
	return exited, <-started
}
