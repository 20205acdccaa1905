package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestExecRoot: a command asks to run as root in a sandbox of the
// sandbox's user: it runs as uid 0 inside (root of the sandbox's user
// namespace, still a host uid far from 0), and the next command is the
// user again. The process driver, whose agent is the sandbox's own
// unprivileged host uid, refuses it by name.
func TestExecRoot(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, "")
	c := s.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := func(root bool) string {
		t.Helper()
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; id -g; grep ^Uid /proc/self/status"}, Root: root})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec (root %v): %+v, %v", root, res, err)
		}
		return res.Stdout
	}
	user := id(false)
	if strings.HasPrefix(user, "0\n") {
		t.Fatalf("the sandbox's user is root already: %q", user)
	}
	root := id(true)
	if !strings.HasPrefix(root, "0\n0\n") {
		t.Fatalf("exec as root: %q, want uid and gid 0", root)
	}
	if again := id(false); again != user {
		t.Errorf("after a root exec the user is %q, want %q", again, user)
	}
	// A background process as root, and its files root's.
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "touch /tmp/by-root; id -u"}, Root: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitProcess(ctx, sb.ID, p.PID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"stat", "-c", "%u", "/tmp/by-root"}})
	if err != nil || res.Stdout != "0\n" {
		t.Errorf("owner of the root process's file: %+v, %v", res, err)
	}

	ps := startServer(t, "", "--driver", "process")
	pc := ps.client()
	psb, err := pc.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pc.Exec(ctx, psb.ID, api.ExecRequest{Cmd: []string{"id", "-u"}, Root: true})
	if !client.IsForbidden(err) || !strings.Contains(err.Error(), "root_unavailable") {
		t.Errorf("root exec on the process driver: %v, want 403 root_unavailable", err)
	}
	_, err = pc.StartProcess(ctx, psb.ID, api.ProcessRequest{Cmd: []string{"id", "-u"}, Root: true})
	if !client.IsForbidden(err) {
		t.Errorf("root process on the process driver: %v, want 403", err)
	}
}
