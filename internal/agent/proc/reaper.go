package proc

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper owns every wait in the process: one goroutine handles SIGCHLD and
// calls wait4(-1, WNOHANG) until nothing is left, handing each exit status
// to whoever started that pid and simply reaping everything else (orphans
// re-parented to the agent, which is a child subreaper).
//
// Nothing else in the process may wait for a child: os/exec's Wait and
// os.Process.Wait would race the reaper for the status.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan<- unix.WaitStatus
}

var (
	reaperOnce sync.Once
	theReaper  *reaper
)

// processReaper returns the process-wide reaper, starting it on first use.
func processReaper() *reaper {
	reaperOnce.Do(func() {
		r := &reaper{waiting: map[int]chan<- unix.WaitStatus{}}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, unix.SIGCHLD)
		go func() {
			for range sigs {
				r.reap()
			}
		}()
		// Reap whatever exited before SIGCHLD was being watched.
		r.reap()
		theReaper = r
	})
	return theReaper
}

func (r *reaper) reap() {
	for {
		var ws unix.WaitStatus
		r.mu.Lock()
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			r.mu.Unlock()
			continue
		}
		if err != nil || pid <= 0 {
			r.mu.Unlock()
			return
		}
		c, ok := r.waiting[pid]
		delete(r.waiting, pid)
		r.mu.Unlock()
		if ok {
			c <- ws
		}
	}
}

// start runs fork on the process thread (see procThread), which must start
// exactly one child and return its pid, while holding the lock the reaper takes before it waits, so the pid is
// registered before the reaper can see it exit. The channel receives the
// child's exit status once.
func (r *reaper) start(fork func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pid int
	var err error
	processThread().do(func() { pid, err = fork() })
	if err != nil {
		return 0, nil, err
	}
	c := make(chan unix.WaitStatus, 1)
	r.waiting[pid] = c
	return pid, c, nil
}
