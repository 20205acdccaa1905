package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// What the host shows of sandboxes: processes by cgroup, and the
// cleanup of what a test's servers left.

// cgroupRoots are parent's directories: one per v1 controller, or the
// one of the unified hierarchy.
func cgroupRoots(parent string) []string {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent))
	if p := filepath.Join("/sys/fs/cgroup", parent); dirExists(p) {
		roots = append(roots, p)
	}
	return roots
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// cleanupHost is the test's last cleanup. Had a server died with
// sandboxes (a failed run), their processes, frozen ones too, would
// outlive the test, and once their uid ranges went back to the host-wide
// registry the next owner's teardown would try to kill them. It thaws and
// SIGKILLs whatever is left under parent or works in dataDir (a warm
// sandbox's agent has no cgroup yet), removes parent's groups and the
// registry's ranges of dataDir.
func cleanupHost(t *testing.T, parent, dataDir string) {
	for deadline := time.Now().Add(time.Minute); ; {
		var left []int
		for _, g := range groupDirs(parent) {
			writeIfThere(filepath.Join(g, "freezer.state"), "THAWED") // v1
			writeIfThere(filepath.Join(g, "cgroup.freeze"), "0")      // v2
			b, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				left = append(left, pid)
			}
		}
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && strings.HasPrefix(cwd, dataDir+"/") {
				pid, _ := strconv.Atoi(filepath.Base(p))
				left = append(left, pid)
			}
		}
		slices.Sort(left)
		if left = slices.Compact(left); len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: processes %v survive SIGKILL", left)
			break
		}
		if !t.Failed() {
			// The last server destroyed everything and stopped.
			t.Errorf("cleanup: processes %v outlived the last server", left)
		}
		t.Logf("cleanup: killing processes %v the test's servers left", left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dirs := groupDirs(parent)
	for i := len(dirs) - 1; i >= 0; i-- { // children first
		_ = os.Remove(dirs[i])
	}
	regs, _ := filepath.Glob(filepath.Join(hostids.Registry, "*"))
	for _, r := range regs {
		if b, err := os.ReadFile(r); err == nil && strings.HasPrefix(string(b), dataDir+"/") {
			_ = os.Remove(r)
		}
	}
}

// groupDirs are the directories of parent's cgroups in every hierarchy,
// each before those below it.
func groupDirs(parent string) []string {
	var dirs []string
	for _, root := range cgroupRoots(parent) {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	return dirs
}

// writeIfThere writes v to the existing file p (a cgroup's control file).
func writeIfThere(p, v string) {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString(v)
	_ = f.Close()
}

// eachProcCgroup calls fn with every process's pid and its cgroup: the
// path in the v1 pids hierarchy, and the unified one's.
func eachProcCgroup(fn func(pid int, cgroup string)) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cg, err := os.ReadFile(filepath.Join(p, "cgroup"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		for _, line := range strings.Split(string(cg), "\n") {
			// hierarchy:controllers:path
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && (f[1] == "pids" || f[1] == "") {
				fn(pid, f[2])
			}
		}
	}
}

// sandboxProcesses are the sandboxes under parent that have a process:
// its agent in <parent>/<id>, its commands below.
func sandboxProcesses(parent string) map[string]bool {
	out := map[string]bool{}
	eachProcCgroup(func(_ int, cgroup string) {
		_, rest, ok := strings.Cut(cgroup, "/"+parent+"/")
		if id, _, _ := strings.Cut(rest, "/"); ok && ids.Valid(id) {
			out[id] = true
		}
	})
	return out
}

// agentPid finds the host pid of sandbox id's agent: the one process
// whose cgroup is the sandbox's own (its commands are in box below it).
// A scan of /proc races processes that start and end meanwhile (a read
// of one that ended fails, and the scan goes on), so it is tried again
// for a while before the agent counts as missing.
func agentPid(t *testing.T, id string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		pid := 0
		eachProcCgroup(func(p int, cgroup string) {
			if strings.HasSuffix(cgroup, "/"+id) {
				pid = p
			}
		})
		if pid != 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no agent of sandbox %s found", id)
		}
	}
}
