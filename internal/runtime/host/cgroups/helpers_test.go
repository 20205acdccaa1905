package cgroups

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// requireRoot skips tests that make real cgroups.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
}

// testParent is a parent group name unique to this test.
func testParent() string {
	return "hutch-test-" + strings.ToLower(rand.Text()[:10])
}

// testID is a random sandbox id: 26 characters of [0-9a-z].
func testID() string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	b := make([]byte, idLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return string(b)
}

// newV1Manager returns a Manager under a fresh parent on a host whose
// controllers are in cgroup v1, and removes the parent when the test ends.
func newV1Manager(t *testing.T) *Manager {
	t.Helper()
	requireRoot(t)
	m, err := New(testParent())
	if errors.Is(err, ErrNoCgroups) {
		t.Skipf("no cgroup file system: %v", err)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if m.Version() != 1 {
		t.Skip("this host keeps its controllers in cgroup v2; the v1 tests need a v1 or hybrid host")
	}
	cleanupParent(t, m)
	return m
}

// newV2Manager returns a v2 Manager on this host's cgroup2 mount, whether or
// not New would pick it, and removes the parent when the test ends.
func newV2Manager(t *testing.T) *Manager {
	t.Helper()
	requireRoot(t)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mountinfo: %v", err)
	}
	defer f.Close()
	mounts, err := parseMountInfo(f)
	if err != nil {
		t.Fatal(err)
	}
	mnt, ok := pick(mounts, func(m mount) bool { return m.v2 })
	if !ok {
		t.Skip("this host has no cgroup2 mount")
	}
	m, err := newV2(testParent(), mnt.point)
	if err != nil {
		t.Fatalf("newV2(%s): %v", mnt.point, err)
	}
	cleanupParent(t, m)
	return m
}

// cleanupParent kills and removes whatever groups are left under m's parent
// when the test ends, then the parent itself, and fails the test if any
// stays behind.
func cleanupParent(t *testing.T, m *Manager) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ids, err := m.List()
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, id := range ids {
			t.Errorf("cleanup: group %s was left behind", id)
			g, _ := m.Open(id)
			if err := g.Kill(ctx); err != nil {
				t.Errorf("cleanup: %v", err)
			}
			if err := g.Remove(ctx); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		for _, h := range m.hiers {
			dir := filepath.Join(h.mount, m.parent)
			if err := rmdir(ctx, dir); err != nil {
				t.Errorf("cleanup: %v", err)
			}
			if exists(dir) {
				t.Errorf("cleanup: %s is left behind", dir)
			}
		}
	})
}

// create makes a group for the test and kills and removes it at the end.
func create(t *testing.T, m *Manager, l Limits) *Group {
	t.Helper()
	g, err := m.Create(testID(), l, Owner{UID: -1, GID: -1})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { removeGroup(t, g) })
	return g
}

// removeGroup kills and removes g and checks that none of its dirs is left.
func removeGroup(t *testing.T, g *Group) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Errorf("Kill: %v", err)
	}
	if err := g.Remove(ctx); err != nil {
		t.Errorf("Remove: %v", err)
	}
	for _, dir := range g.dirs() {
		if exists(dir) {
			t.Errorf("%s is left after Remove", dir)
		}
	}
}

// proc is a child process the test reaps in the background, so that a
// killed one does not linger as a zombie.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// start runs argv directly.
func start(t *testing.T, argv ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(argv[0], argv[1:]...))
}

// holdScript is the shell of startHeld: it waits on a line of stdin and
// then execs its arguments.
const holdScript = `read _; exec "$@"`

// startHeld runs argv only once release is called, so the test can put the
// process in a group before it does anything: a shell waits on a line of
// stdin and then execs argv.
func startHeld(t *testing.T, argv ...string) *proc {
	t.Helper()
	args := append([]string{"-c", holdScript, "sh"}, argv...)
	return startCmd(t, exec.Command("sh", args...))
}

func startCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// release lets a process from startHeld exec its command.
func (p *proc) release(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
}

// waitExec waits until a released process from startHeld runs its own
// command: until then it is the holding shell, which reads its line and
// execs, using CPU time in its group, before the command exists.
func (p *proc) waitExec(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid()))
		if err == nil && len(b) > 0 && !strings.Contains(string(b), holdScript) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d has not exec'd its command (%q, %v)", p.pid(), b, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait returns how the process ended.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("process %d still runs after %v", p.pid(), timeout)
		return nil
	}
}

// cgroupOf returns the group of pid in the hierarchy holding controller
// ("" for the v2 hierarchy), from /proc/<pid>/cgroup.
func cgroupOf(t *testing.T, pid int, controller string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2]
			}
		}
	}
	t.Fatalf("pid %d has no %q line in /proc/%d/cgroup", pid, controller, pid)
	return ""
}

// readBack reads a cgroup file for a test, failing it on error.
func readBack(t *testing.T, path string) string {
	t.Helper()
	s, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startMix starts sleeps in <id> (placed like the agent), a stopped sleep
// and a shell that keeps forking, both in the box.
func startMix(t *testing.T, g *Group) []*proc {
	t.Helper()
	var procs []*proc
	for range 3 {
		p := start(t, "sleep", "1000")
		if err := g.Place(p.pid()); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	toBox := func(p *proc) {
		if g.m.version == 2 {
			if err := nsinit.MoveProcess(g.Join().BoxProcs, p.pid()); err != nil {
				t.Fatal(err)
			}
		} else if err := nsinit.JoinThread(g.Join().BoxTasks, p.pid()); err != nil {
			t.Fatal(err)
		}
	}
	stopped := start(t, "sleep", "1000")
	toBox(stopped)
	if err := unix.Kill(stopped.pid(), unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	forker := startHeld(t, "sh", "-c", "while :; do sleep 1 & sleep 0.01; done")
	toBox(forker)
	forker.release(t)
	procs = append(procs, stopped, forker)
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, err := g.Procs()
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) > len(procs) {
			t.Logf("%d processes in the group", len(pids))
			return procs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forking shell started nothing: Procs() = %v", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
