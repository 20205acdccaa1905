package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// TestAppEnvOutOfCommandsReach: the config an app's processes run with
// is in their environment, and a command of the sandbox (its user, as an
// exec or a task runs) tries to read it from /proc: environ and mem are
// refused, since the app's processes have a group of their own
// (envelope.AppGID); the app's processes cannot read a command's either
// (a task's config for the agent). They still run as the sandbox's user:
// what they write in the app directory is the user's to change.
func TestAppEnvOutOfCommandsReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running commands as another user needs root; CI runs this as root")
	}
	const user = 1000
	f := appFixtureWith(t, func(c *agent.Config) {
		c.Credential = &syscall.Credential{Uid: user, Gid: user, Groups: []uint32{}}
		c.AppCredential = &syscall.Credential{Uid: user, Gid: envelope.AppGID, Groups: []uint32{}}
	})
	// The user reaches the fixture's root (t.TempDir's are 0700) and owns
	// the app directory, as in a sandbox.
	for _, d := range []string{filepath.Dir(f.Root), f.Root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(f.Work, user, user); err != nil {
		t.Fatal(err)
	}
	// A command of the user's holding the agent's config, as a task does.
	task, err := f.Client.StartProcess(context.Background(), api.ProcessRequest{Cmd: []string{"sleep", "100000"},
		Env: map[string]string{"AGENT_SECRET": "s3cret-agent"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(task.PID, syscall.SIGKILL) })
	writeManifest(t, f.Work, fmt.Sprintf(`version: 1
workers:
  - name: app
    command: echo made > made-by-app; exec sleep 100000
  - name: peek
    command: if (exec 3< /proc/%[1]d/environ) 2>/dev/null; then echo "environ opened"; tr '\0' '\n' < /proc/%[1]d/environ; else echo "environ refused"; fi; exec sleep 100000
`, task.PID))
	configure(t, f, map[string]string{"APP_SECRET": "s3cret-runtime"})
	pid := waitProc(t, f, "app", "running", running).PID

	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t%d\t%d\t", user, user, user)) ||
		!strings.Contains(string(status), fmt.Sprintf("\nGid:\t%d\t%d\t%d\t", envelope.AppGID, envelope.AppGID, envelope.AppGID)) {
		t.Errorf("the app process's ids, want uid %d and gid %d:\n%s", user, envelope.AppGID, status)
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || !strings.Contains(string(environ), "APP_SECRET=s3cret-runtime") {
		t.Fatalf("the app process's environment lacks its config: %v %q", err, environ)
	}

	out, errOut, res := f.Run(t, api.ExecRequest{Cmd: []string{"sh", "-c", fmt.Sprintf(`
		for f in environ mem; do
			if (exec 3< /proc/%[1]d/$f) 2>/dev/null; then echo "$f opened"; else echo "$f refused"; fi
		done
		tr '\0' '\n' < /proc/%[1]d/environ
		echo again >> made-by-app && rm made-by-app && echo "changed what the app wrote"`, pid)}})
	got := out + errOut
	for _, want := range []string{"environ refused", "mem refused", "changed what the app wrote"} {
		if !strings.Contains(got, want) {
			t.Errorf("the user's command: no %q (exit %d):\n%s", want, res.ExitCode, got)
		}
	}
	for _, leak := range []string{"opened", "s3cret-runtime"} {
		if strings.Contains(got, leak) {
			t.Errorf("the user's command read the app's process (%q):\n%s", leak, got)
		}
	}
	// Nor does the app read the command's.
	waitProc(t, f, "peek", "running", running)
	lines := logLines(t, f, "peek", 100)
	if !hasLine(lines, agentproto.Stdout, "environ refused") || hasLine(lines, agentproto.Stdout, "s3cret-agent") {
		t.Errorf("the app reading a command of the user's: %+v", lines)
	}
}
