package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// descendants lists every process below pid: its children, theirs, and so
// on, from /proc/<pid>/task/*/children. Zombies count until reaped.
func descendants(pid int) ([]int, error) {
	var all []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, err := children(p)
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				all = append(all, k)
				queue = append(queue, k)
			}
		}
	}
	return all, nil
}

// children reads the children of every thread of pid. A process that is
// gone has none.
func children(pid int) ([]int, error) {
	files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			return nil, errors.New("/proc/<pid>/task/<tid>/children is missing: the kernel lacks CONFIG_PROC_CHILDREN")
		} else if _, err := os.Stat("/proc/self"); err != nil {
			return nil, fmt.Errorf("list child processes: /proc is not mounted: %w", err)
		}
		return nil, nil
	}
	var kids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread or the process went away
		}
		for _, field := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(field); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids, nil
}

// KillDescendants SIGKILLs every descendant of pid and repeats until none
// is left, so that processes forked during the walk die too; the reaper
// reaps them (pid must be this process, a subreaper, for orphans to come
// back to it). It gives up when ctx is done.
func KillDescendants(ctx context.Context, pid int) error {
	for {
		pids, err := descendants(pid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = processThread().kill(p, unix.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d processes still alive or unreaped: %w", len(pids), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
