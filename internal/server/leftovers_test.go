package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// killLeftovers kills, when t ends (after the servers it starts next have
// shut down), every process working in dataDir: the process driver's
// agents and their commands outlive their server by design, so a test
// that does not destroy each sandbox it made would leave them running on
// the machine (TestNodes and TestCutOff left three a run).
func killLeftovers(t *testing.T, dataDir string) {
	t.Cleanup(func() {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			cwd, err := os.Readlink(filepath.Join(p, "cwd"))
			if err != nil {
				continue
			}
			cwd = strings.TrimSuffix(cwd, " (deleted)")
			if cwd != dataDir && !strings.HasPrefix(cwd, dataDir+"/") {
				continue
			}
			if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}
