package hostproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startSession runs a shell script as the leader of a session of its own,
// killed when the test ends.
func startSession(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// measureUntil measures the session of leader until ok holds.
func measureUntil(t *testing.T, leader, root int, ok func(Usage) bool) Usage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u, err := Measure(func(p Proc) bool { return p.Sid == leader }, root)
		if err != nil {
			t.Fatal(err)
		}
		if ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage stays %+v", u)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMeasure: a busy session's CPU time rises, with its task and memory;
// of a root, only the time of the children it reaped counts.
func TestMeasure(t *testing.T) {
	busy := startSession(t, "while :; do :; done")
	u := measureUntil(t, busy.Process.Pid, 0, func(u Usage) bool { return u.CPUNS > 0 })
	if u.Tasks != 1 || u.RSSBytes <= 0 {
		t.Errorf("a busy shell: %+v; want one task and its memory", u)
	}
	measureUntil(t, busy.Process.Pid, 0, func(v Usage) bool { return v.CPUNS > u.CPUNS })
	if u, err := Measure(func(p Proc) bool { return p.Sid == busy.Process.Pid }, busy.Process.Pid); err != nil || u != (Usage{}) {
		t.Errorf("the busy shell as the root: %+v, %v; want nothing (it reaped no child)", u, err)
	}

	// The root reaps a busy child, then waits on a sleep.
	reaper := startSession(t, `timeout 0.2 sh -c 'while :; do :; done'; exec sleep 1000 & wait`)
	u = measureUntil(t, reaper.Process.Pid, reaper.Process.Pid, func(u Usage) bool { return u.CPUNS > 0 && u.Tasks == 1 })
	t.Logf("after the reaped child: %+v", u)
}
