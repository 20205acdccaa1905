package proc

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/hutchdev/hutch/internal/agent/confine"
)

// TestRlimitsOtherUser: the agent, root, sets the limits of a command it
// started as another user, with or without CAP_SYS_RESOURCE (root here
// has none, as in a container that drops it).
func TestRlimitsOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to start a command as another user")
	}
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := setRlimits(cmd.Process.Pid, []confine.Rlimit{{Resource: "data", Cur: 64 << 20, Max: 64 << 20}}); err != nil {
		t.Fatalf("setRlimits of another user's process: %v", err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Max data size\s+67108864\s+67108864`).Match(b) {
		t.Errorf("the command's limits:\n%s", b)
	}
	if os.Geteuid() != 0 || os.Getuid() != 0 {
		t.Error("the agent's own ids changed")
	}
}
