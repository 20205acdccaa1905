package drivertest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// testIsolation holds for every driver, including the degraded process
// driver: a sandbox reads no host file it was not given, writes nothing
// outside its own root, cannot reach a server on host loopback, and cannot
// reach another sandbox's files.
func testIsolation(t *testing.T, s Suite) {
	d := s.New(t)
	a := create(t, d, spec(api.Limits{}))
	b := create(t, d, spec(api.Limits{}))

	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secretDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	for _, p := range []string{secret, "/root/.bashrc", filepath.Join(cwd, "drivertest.go"), "/etc/shadow"} {
		if res := run(t, a, "cat", p); res.ExitCode == 0 {
			t.Errorf("sandbox read host file %s: %q", p, res.Stdout)
		}
	}
	// A write may land in the sandbox's own /etc or /tmp; it must never
	// reach the host's.
	for _, p := range []string{"/etc/hutch-escape", "/usr/hutch-escape", filepath.Join(secretDir, "escape"), "/tmp/hutch-escape"} {
		run(t, a, "/bin/sh", "-c", "echo x > "+p)
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("sandbox wrote host path %s", p)
		}
	}

	// /tmp and /dev/shm keep each file to its owner (the sticky bit); a
	// driver that gives sandboxes a root of their own (one from an image)
	// gives them their own /tmp and /dev/shm, which take files.
	if got := sh(t, a, "stat -c %a /tmp /dev/shm"); got != "1777\n1777\n" {
		t.Errorf("the modes of /tmp and /dev/shm: %q, want 1777 each", got)
	}
	if d.Capabilities().Images {
		sh(t, a, "echo x > /tmp/scratch-probe && echo x > /dev/shm/scratch-probe")
	}

	// Nothing the agent holds (the descriptors it was started with, its
	// socket) passes to a command: a directory descriptor of the host's
	// would be a way out of any root.
	// (ls holds one of its own, 3, on the directory it lists; whatever
	// the test process was started with must not pass through either.)
	if res := run(t, a, "ls", "/proc/self/fd"); strings.Join(strings.Fields(res.Stdout), " ") != "0 1 2 3" {
		t.Errorf("a command holds descriptors %q; want 0 1 2 (and ls's own 3)", res.Stdout)
	}

	// Another sandbox's files.
	sh(t, b, "echo b-secret > mine.txt")
	if res := run(t, a, "cat", filepath.Join(b.handle.Workdir, "mine.txt")); res.ExitCode == 0 {
		t.Errorf("sandbox a read sandbox b's file: %q", res.Stdout)
	}

	// A server on host loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res := run(t, a, "/bin/bash", "-c", fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", port))
	select {
	case <-accepted:
		t.Errorf("sandbox connected to a host loopback server (%+v)", res)
	default:
		if res.ExitCode == 0 {
			t.Errorf("connect to host loopback reported success: %+v", res)
		}
	}

	// Privileged operations.
	for _, cmd := range []string{"unshare -U true", "unshare -m true", "mount -t tmpfs none " + a.handle.Workdir} {
		if res := run(t, a, "/bin/sh", "-c", cmd); res.ExitCode == 0 {
			t.Errorf("sandbox could run %q", cmd)
		}
	}
	if out := sh(t, a, "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"); !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("no_new_privs not set: %q", out)
	}
}
