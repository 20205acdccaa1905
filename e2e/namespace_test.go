package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestUsers: commands run as an unprivileged user by default and as root
// inside when asked; what the file API writes belongs to that user, and the
// file API may touch only what that user may.
func TestUsers(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || !info.Features["root_user"] || !info.Features["oom_report"] {
		t.Fatalf("info = %+v, %v; want root_user and oom_report", info, err)
	}

	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Root || sb.Cwd != "/workspace" {
		t.Fatalf("created %+v; want a user sandbox in /workspace", sb)
	}
	if _, err := c.WriteFile(ctx, sb.ID, "from-api.txt", 0o644, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -un; stat -c %U from-api.txt; echo $HOME"}})
	if err != nil || res.Stdout != "user\nuser\n/home/user\n" {
		t.Fatalf("user sandbox: %+v, %v", res, err)
	}
	if _, err := c.WriteFile(ctx, sb.ID, "/root/x", 0o644, strings.NewReader("x")); err == nil {
		t.Fatal("the file API wrote into /root of a user sandbox")
	}

	root, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Root: true})
	if err != nil {
		t.Fatal(err)
	}
	if !root.Root {
		t.Fatalf("created %+v; want root", root)
	}
	if _, err := c.WriteFile(ctx, root.ID, "/root/x", 0o600, strings.NewReader("x")); err != nil {
		t.Fatalf("the file API of a root sandbox: %v", err)
	}
	res, err = c.Exec(ctx, root.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; stat -c %U /root/x; echo $HOME"}})
	if err != nil || res.Stdout != "0\nroot\n/root\n" {
		t.Fatalf("root sandbox: %+v, %v", res, err)
	}
}

// TestOOMReported: a command killed at the memory limit says so in its
// result and in a sandbox.oom event, and the sandbox goes on.
func TestOOMReported(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{MemoryMB: 64}})
	if err != nil {
		t.Fatal(err)
	}
	// tail keeps a whole line in memory: 256 MiB without a newline.
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "head -c 268435456 /dev/zero | tail -n 1 | wc -c"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OOMKilled || strings.TrimSpace(res.Stdout) == "268435456" {
		t.Fatalf("exec = %+v; want oom_killed", res)
	}
	res, err = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"echo", "alive"}})
	if err != nil || res.Stdout != "alive\n" || res.OOMKilled {
		t.Fatalf("after the OOM kill: %+v, %v", res, err)
	}
	list, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventSandboxOOM}})
	if err != nil || len(list.Events) != 1 || list.Events[0].Data["memory_mb"] != float64(64) {
		t.Fatalf("oom events = %+v, %v; want one", list, err)
	}
}

// TestProcessDriverRefusesRoot: a driver that cannot run root inside says
// so before it creates anything.
func TestProcessDriverRefusesRoot(t *testing.T) {
	s := startServer(t, "", "--driver", "process")
	_, err := s.client().CreateSandbox(context.Background(), api.CreateSandboxRequest{Root: true})
	if !client.IsInvalid(err) || !strings.Contains(err.Error(), "root_unsupported") {
		t.Fatalf("create root on the process driver: %v; want root_unsupported", err)
	}
}

// TestRootlessServer: hutch serve as an unprivileged user picks the
// namespace driver rootless (this host allows unprivileged user
// namespaces), says so, and runs sandboxes whose root is that user.
func TestRootlessServer(t *testing.T) {
	base, err := os.MkdirTemp("", "hutch-e2e-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	if err := os.Chown(data, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	s := startServerAs(t, &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}, data, "--driver", "auto")
	c := s.client()
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != "namespace" || info.Isolation != api.IsolationDegraded || !strings.Contains(strings.Join(info.Degraded, " "), "rootless") {
		t.Fatalf("info = %+v; want the namespace driver, rootless and reported degraded", info)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; cat /proc/self/uid_map"}})
	if err != nil || !strings.HasPrefix(res.Stdout, "0\n") || !strings.Contains(res.Stdout, "65534") {
		t.Fatalf("exec = %+v, %v; want root inside, mapped to nobody", res, err)
	}
}
