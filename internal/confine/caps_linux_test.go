package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func init() { scenarios["caps"] = childCaps }

// TestCapsBounding: Caps leaves only the kept capabilities in the bounding
// set of every thread (those made before Apply too) and of what the process
// starts, and leaves the caller's effective set alone.
func TestCapsBounding(t *testing.T) {
	needAllThreads(t)
	if os.Geteuid() != 0 {
		t.Skip("dropping from the bounding set needs CAP_SETPCAP: run as root")
	}
	runChild(t, "caps", childArgs{Config: Config{Caps: &Caps{Keep: []string{"chown", "kill"}}}})
}

func childCaps(a *childArgs) error {
	var before []*lockedWorker
	for range 3 {
		before = append(before, startLockedWorker())
	}
	effBefore := procStatus(readStatus("/proc/self/status"))["CapEff"]
	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}
	const want = "0000000000000021" // chown (0) and kill (5)
	var c checks
	ents, err := os.ReadDir("/proc/self/task")
	c.ok("list /proc/self/task", err)
	for _, e := range ents {
		s := procStatus(readStatus(filepath.Join("/proc/self/task", e.Name(), "status")))
		c.that(fmt.Sprintf("task %s: CapBnd %s, want %s", e.Name(), s["CapBnd"], want), s["CapBnd"] == want)
		c.that(fmt.Sprintf("task %s: CapEff %s changed from %s", e.Name(), s["CapEff"], effBefore), s["CapEff"] == effBefore)
	}
	c.that("threads made before Apply exist", len(before) == 3)
	out, err := exec.Command("/bin/grep", "-E", "^Cap(Bnd|Prm):", "/proc/self/status").Output()
	c.ok("run a child", err)
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		c.that(fmt.Sprintf("child %s = %s, want %s", f[0], f[1], want), len(f) == 2 && f[1] == want)
	}
	return c.err()
}

func readStatus(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
