package hostproc

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// Waited is how long the threads of process pid have waited on a run
// queue for a CPU, in all, since each started: the second field of
// /proc/<pid>/task/<tid>/schedstat. A process that does not answer while
// this grows wants a CPU and does not get one (a host overloaded), where
// one that is hung waits on nothing the scheduler can give it. Threads
// that exited no longer count.
func Waited(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
			ns += v
		}
	}
	return time.Duration(ns), nil
}
