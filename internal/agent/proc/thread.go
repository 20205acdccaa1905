package proc

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// procThread runs every fork and every kill of the agent on one locked OS
// thread. Below Landlock ABI 8, confine.Apply puts each thread of the agent
// in a Landlock domain of its own, and with a signal scope (ABI 6+) a thread
// may only signal processes of its own domain. A child inherits the domain
// of the thread that forked it, so forking and signalling from the same
// thread keeps every child within reach.
type procThread struct {
	calls chan func()
}

var (
	procThreadOnce sync.Once
	theProcThread  *procThread
)

// processThread returns the process-wide fork-and-kill thread, starting it
// on first use. The agent calls it before it confines itself.
func processThread() *procThread {
	procThreadOnce.Do(func() {
		p := &procThread{calls: make(chan func())}
		go func() {
			// Never unlocked: the thread lives as long as the agent.
			runtime.LockOSThread()
			for f := range p.calls {
				f()
			}
		}()
		theProcThread = p
	})
	return theProcThread
}

// do runs f on the thread and waits for it.
func (p *procThread) do(f func()) {
	done := make(chan struct{})
	p.calls <- func() {
		defer close(done)
		f()
	}
	<-done
}

// kill sends sig to pid (a negative pid names a process group) from the
// thread.
func (p *procThread) kill(pid int, sig unix.Signal) error {
	var err error
	p.do(func() { err = unix.Kill(pid, sig) })
	return err
}

// Kill sends sig to pid (a negative pid names a process group) from the
// fork-and-kill thread, which every command the agent starts is within
// reach of.
func Kill(pid int, sig unix.Signal) error {
	return processThread().kill(pid, sig)
}

// OnForkThread runs f on the thread every command is forked from and
// returns its error. What f changes of that thread (its cgroup, a cgroup
// namespace) every command inherits; hutch-agent uses it while it sets up a
// namespace sandbox.
func OnForkThread(f func() error) error {
	var err error
	processThread().do(func() { err = f() })
	return err
}
