package cgroups

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentOwner is the host uid and gid the tests' fake agents run as.
var agentOwner = Owner{UID: 4242, GID: 4343}

// TestAgentJoinsAsOwner runs a shell as the agent's unprivileged user that
// does what the agent does after the host placed it: on v1 it moves itself
// into every box/tasks, on v2 it moves itself from box to agent and a child
// of it back into box. A command it then starts must be born in the box.
// It works only when Create gave the agent's user the files Join names.
func TestAgentJoinsAsOwner(t *testing.T) {
	managers := []struct {
		name string
		new  func(*testing.T) *Manager
	}{
		{"v1", newV1Manager},
		{"v2", newV2Manager},
	}
	owners := []struct {
		name  string
		owner Owner
		ok    bool
	}{
		{"owner", agentOwner, true},
		{"root-owned files", Owner{UID: -1, GID: -1}, false},
	}
	for _, mt := range managers {
		t.Run(mt.name, func(t *testing.T) {
			m := mt.new(t)
			for _, ot := range owners {
				t.Run(ot.name, func(t *testing.T) {
					g, err := m.Create(testID(), Limits{Pids: 20}, ot.owner)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { removeGroup(t, g) })
					out, err := runAgent(t, g)
					t.Logf("agent: %v\n%s", err, out)
					want := "/" + m.parent + "/" + g.id + "/box"
					joined := err == nil && strings.Contains(out, want)
					if joined != ot.ok {
						t.Errorf("agent joined the box = %v, want %v", joined, ot.ok)
					}
					if ot.ok && err == nil {
						for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
							if !strings.HasSuffix(line, want) && !skipLine(m, line) {
								t.Errorf("the agent's command is in %s, want %s", line, want)
							}
						}
					}
				})
			}
		})
	}
}

// skipLine tells the /proc/self/cgroup lines of hierarchies hutch does not
// use, which stay where they were.
func skipLine(m *Manager, line string) bool {
	parts := strings.SplitN(line, ":", 3)
	if len(parts) != 3 {
		return true
	}
	if m.version == 2 {
		return parts[1] != "" // v1 hierarchies of a hybrid host
	}
	for _, c := range strings.Split(parts[1], ",") {
		if _, ok := m.find(c); ok {
			return false
		}
	}
	return true
}

// runAgent starts a shell as agentOwner, places it like the host places the
// agent, lets it join, and returns what `cat /proc/self/cgroup` printed from
// inside the box.
func runAgent(t *testing.T, g *Group) (string, error) {
	t.Helper()
	j := g.Join()
	var script string
	var args []string
	if j.Version == 2 {
		script = `read _
echo $$ > "$1" || exit 11
sh -c 'echo $$ > "$1" && exec cat /proc/self/cgroup' sh "$2"`
		args = []string{j.AgentProcs, j.BoxProcs}
	} else {
		script = `read _
for f; do echo $$ > "$f" || exit 12; done
cat /proc/self/cgroup`
		args = j.BoxTasks
	}
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(agentOwner.UID), Gid: uint32(agentOwner.GID)},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	p := startCmd(t, cmd)
	if err := g.Place(p.pid()); err != nil {
		t.Fatalf("Place: %v", err)
	}
	p.release(t)
	err := p.wait(t, 10*time.Second)
	return out.String(), err
}
