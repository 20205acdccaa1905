package launch

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threads is this process's number of OS threads.
func threads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// Children waited for by reapLater hold no thread each while they run,
// and are reaped (no zombie left) once they exit.
func TestReapHoldsNoThread(t *testing.T) {
	const n = 64
	before := threads(t)
	var pids []int
	for range n {
		cmd := exec.Command("sleep", "1")
		var pidfd int
		askPidfd(cmd, &pidfd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if pidfd < 0 {
			t.Skip("this kernel gives no pidfds: reaping falls back to a thread per child")
		}
		reapLater(cmd, pidfd)
		pids = append(pids, cmd.Process.Pid)
	}
	if during := threads(t); during-before >= n/2 {
		t.Errorf("%d children running: threads went from %d to %d; want no thread per child", n, before, during)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for {
			_, err := os.Stat("/proc/" + strconv.Itoa(pid))
			if os.IsNotExist(err) {
				break // exited and reaped
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				t.Fatalf("child %d still there 20 s on (%s); want it reaped once it exits", pid, b)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
