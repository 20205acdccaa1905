package confine

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func init() { scenarios["caps"] = childCaps }

// TestDropBounding: DropBounding leaves only the kept capabilities in the
// calling thread's bounding set and in what that thread starts; other
// threads and the thread's effective set are left alone.
func TestDropBounding(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dropping from the bounding set needs CAP_SETPCAP: run as root")
	}
	runChild(t, "caps", childArgs{})
	if err := DropBounding(&Caps{Keep: []string{"no_such_cap"}}); err == nil {
		t.Error("DropBounding accepted an unknown capability")
	}
}

func childCaps(*childArgs) error {
	const want = "0000000000000021" // chown (0) and kill (5)
	var c checks
	effBefore := procStatus(readStatus("/proc/thread-self/status"))["CapEff"]
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := DropBounding(&Caps{Keep: []string{"chown", "kill"}}); err != nil {
			done <- err
			return
		}
		s := procStatus(readStatus("/proc/thread-self/status"))
		c.that(fmt.Sprintf("thread CapBnd %s, want %s", s["CapBnd"], want), s["CapBnd"] == want)
		c.that(fmt.Sprintf("thread CapEff %s changed from %s", s["CapEff"], effBefore), s["CapEff"] == effBefore)
		out, err := exec.Command("/bin/grep", "-E", "^Cap(Bnd|Prm):", "/proc/self/status").Output()
		c.ok("run a child", err)
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			c.that(fmt.Sprintf("child %s = %s, want %s", f[0], f[1], want), len(f) == 2 && f[1] == want)
		}
		done <- nil
	}()
	c.ok("DropBounding", <-done)
	// This goroutine's thread is another one: untouched.
	s := procStatus(readStatus("/proc/thread-self/status"))
	c.that(fmt.Sprintf("another thread's CapBnd became %s", s["CapBnd"]), s["CapBnd"] != want)
	return c.err()
}

func readStatus(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
