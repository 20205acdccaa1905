package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// starve holds process pid to a sliver of a CPU, as an overloaded host
// would: it moves it into a cpu cgroup of its own whose quota is 1 ms a
// second, shared with busy loops, so its threads wait for a CPU without
// loading the host. release (also run when t ends) puts it back into the
// cgroup it was in and stops the loops. Skips t where no cpu controller
// is mounted.
func starve(t *testing.T, pid int) (release func()) {
	t.Helper()
	root, v2 := "/sys/fs/cgroup/cpu", false
	quota := [][2]string{{"cpu.cfs_period_us", "1000000"}, {"cpu.cfs_quota_us", "1000"}}
	unlimited := [2]string{"cpu.cfs_quota_us", "-1"}
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " cpu ") {
		root, v2 = "/sys/fs/cgroup", true
		quota, unlimited = [][2]string{{"cpu.max", "1000 1000000"}}, [2]string{"cpu.max", "max"}
	} else if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		t.Skip("no cpu cgroup controller mounted")
	}
	was := cpuCgroupOf(t, pid, v2)
	dir := filepath.Join(root, "hutch-e2e-starve-"+ids.Token(6))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, q := range quota {
		writeFile(t, filepath.Join(dir, q[0]), q[1])
	}
	var hogs []*exec.Cmd
	release = sync.OnceFunc(func() {
		// The process may have exited meanwhile: then nothing to move.
		_ = os.WriteFile(filepath.Join(root, was, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		// A killed loop needs a CPU to exit: at the quota, 16 of them
		// take minutes.
		_ = os.WriteFile(filepath.Join(dir, unlimited[0]), []byte(unlimited[1]), 0o644)
		for _, h := range hogs {
			_ = h.Process.Kill()
			_ = h.Wait()
		}
		_ = os.Remove(dir)
	})
	t.Cleanup(release)
	for range starveLoops {
		h := exec.Command("/bin/sh", "-c", "while :; do :; done")
		h.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := h.Start(); err != nil {
			release()
			t.Fatal(err)
		}
		hogs = append(hogs, h)
		writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(h.Process.Pid))
	}
	writeFile(t, filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
	return release
}

// starveLoops is how many busy loops share the starved process's 1 ms a
// second: with 16, it gets about 60 µs of CPU a second, too little to
// answer an HTTP/2 ping within agentclient's 5 s.
const starveLoops = 16

// cpuCgroupOf is the path of pid's cpu cgroup, below the hierarchy's root.
func cpuCgroupOf(t *testing.T, pid int, v2 bool) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		if v2 && f[0] == "0" || !v2 && strings.Contains(","+f[1]+",", ",cpu,") {
			return f[2]
		}
	}
	t.Fatalf("no cpu cgroup of %d in:\n%s", pid, b)
	return ""
}

func writeFile(t *testing.T, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}
