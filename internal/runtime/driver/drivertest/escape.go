package drivertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// testEscape is the escape suite drivers of full isolation pass: each test
// fails if the sandbox manages what it tries.
func testEscape(t *testing.T, s Suite) {
	d := s.New(t)
	escape := func(name string, fn func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if why, ok := s.SkipEscape[name]; ok {
				t.Skip(why)
			}
			fn(t)
		})
	}
	escape("HostFiles", func(t *testing.T) { escapeHostFiles(t, s, d) })
	escape("Processes", func(t *testing.T) { escapeProcesses(t, d) })
	escape("Network", func(t *testing.T) { escapeNetwork(t, d) })
	escape("Syscalls", func(t *testing.T) { escapeSyscalls(t, s, d) })
	escape("WriteOutside", func(t *testing.T) { escapeWrite(t, s, d) })
	escape("NoHostPaths", func(t *testing.T) { escapeHostPaths(t, s, d) })
	escape("AgentProc", func(t *testing.T) { escapeAgentProc(t, s, d) })
	escape("Identity", func(t *testing.T) { escapeIdentity(t, s, d) })
	escape("HostBudgets", func(t *testing.T) { escapeHostBudgets(t, s, d) })
	if d.Capabilities().Limits.Pids {
		escape("ForkBomb", func(t *testing.T) { escapeForkBomb(t, d) })
	}
	if d.Capabilities().Limits.Memory {
		escape("MemoryHog", func(t *testing.T) { escapeMemoryHog(t, s, d) })
	}
}

// hostDirsOf is the sandbox's directory on the host, where its agent's
// socket is; none for a sandbox whose agent listens on TCP (a Pod, whose
// files are its node's runtime's).
func hostDirsOf(sb *sandbox) []string {
	if sb.handle.Agent.Network != "unix" {
		return nil
	}
	return []string{filepath.Dir(filepath.Dir(sb.handle.Agent.Address))}
}

// forbidden is what the suite knows a sandbox must never see of the host:
// the driver's paths, /root, and the directory the test (hutch) runs in.
func forbidden(s Suite) []string {
	cwd, _ := os.Getwd()
	return append([]string{"/root", cwd}, s.HostPaths...)
}

func escapeHostFiles(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	b := create(t, d, spec(api.Limits{}))
	sh(t, b, "echo b-secret > mine.txt")
	// A sandbox has its own /root, /tmp and so on: what it must not see is
	// what the host keeps there. Markers planted in each host directory the
	// test can write must stay out of sight.
	marker := "hutch-marker-" + a.id
	var planted []string
	for _, dir := range forbidden(s) {
		p := filepath.Join(dir, marker)
		if err := os.WriteFile(p, []byte("host secret"), 0o644); err == nil {
			planted = append(planted, p)
			defer os.Remove(p)
		}
	}
	if len(planted) == 0 {
		t.Fatal("the test could plant no marker on the host")
	}
	paths := planted
	for _, dir := range hostDirsOf(b) {
		paths = append(paths, dir, filepath.Join(dir, "upper", "fs", "workspace", "mine.txt"))
	}
	for _, p := range paths {
		res := run(t, a, "/bin/sh", "-c", "cat "+p+"; ls "+filepath.Dir(p))
		if strings.Contains(res.Stdout, "host secret") || strings.Contains(res.Stdout, "b-secret") ||
			strings.Contains(res.Stdout, marker) || strings.Contains(res.Stdout, "mine.txt") {
			t.Errorf("the sandbox reached host path %s: %q", p, res.Stdout)
		}
	}
	// Its /proc is its own: pid 1 is not the host's init, and no process
	// of the host (this test among them) is there.
	host1, _ := os.ReadFile("/proc/1/cmdline")
	if got := sh(t, a, "cat /proc/1/cmdline"); got == string(host1) {
		t.Errorf("the sandbox's pid 1 is the host's init (%q)", got)
	}
	self := filepath.Base(os.Args[0])
	procs := sh(t, a, "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '")
	if strings.Contains(procs, self) {
		t.Errorf("the sandbox sees the host's process %s: %q", self, procs)
	}
	// Nor does anything of its own name a host path of hutch's (its
	// agent's command line, an environment variable).
	for _, p := range append(s.HostPaths, hostDirsOf(a)...) {
		if strings.Contains(procs, p) {
			t.Errorf("the sandbox's processes show host path %s: %q", p, procs)
		}
	}
}

func escapeProcesses(t *testing.T, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	b := create(t, d, spec(api.Limits{}))
	sh(t, b, "sleep 4242 >/dev/null 2>&1 &")
	out := sh(t, a, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
	if strings.Contains(out, "4242") {
		t.Errorf("sandbox a sees sandbox b's process: %q", out)
	}
	n := len(strings.Fields(sh(t, a, "ls -d /proc/[0-9]*")))
	if n > 16 {
		t.Errorf("the sandbox sees %d processes; only its agent and this command should be there", n)
	}
}

func escapeNetwork(t *testing.T, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	// Only lo.
	out := sh(t, a, "tail -n +3 /proc/net/dev | cut -d: -f1")
	if ifs := strings.Fields(out); len(ifs) != 1 || ifs[0] != "lo" {
		t.Errorf("the sandbox has network interfaces %v, want only lo", ifs)
	}
	// No address of the host answers, loopback or not.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	addrs, _ := net.InterfaceAddrs()
	for _, ad := range addrs {
		ip, _, _ := net.ParseCIDR(ad.String())
		if ip == nil || ip.To4() == nil {
			continue
		}
		res := run(t, a, "/bin/bash", "-c", fmt.Sprintf("timeout 3 bash -c 'echo hi > /dev/tcp/%s/%d'", ip, port))
		if res.ExitCode == 0 {
			t.Errorf("the sandbox connected to the host at %s:%d", ip, port)
		}
	}
	select {
	case from := <-accepted:
		t.Errorf("the host accepted a connection from the sandbox (%s)", from)
	default:
	}
}

func escapeSyscalls(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	probeSyscalls(t, s, a)
	if got := sh(t, a, "echo alive"); got != "alive\n" {
		t.Fatalf("after the probe: %q", got)
	}
	if !d.Capabilities().RootUser {
		return
	}
	sp := spec(api.Limits{})
	sp.Root = true
	r := create(t, d, sp)
	probeSyscalls(t, s, r)
	if got := sh(t, r, "echo alive"); got != "alive\n" {
		t.Fatalf("root sandbox after the probe: %q", got)
	}
}

func escapeWrite(t *testing.T, s Suite, d driver.Driver) {
	sp := spec(api.Limits{})
	sp.Root = d.Capabilities().RootUser // the strongest user the driver offers
	a := create(t, d, sp)
	marker := "hutch-escape-" + strconv.Itoa(os.Getpid())
	targets := []string{"/etc/" + marker, "/tmp/" + marker, "/usr/" + marker, "/" + marker}
	for _, dir := range hostDirsOf(a) {
		targets = append(targets, filepath.Join(dir, marker))
	}
	for _, dir := range forbidden(s) {
		targets = append(targets, filepath.Join(dir, marker))
	}
	for _, p := range targets {
		run(t, a, "/bin/sh", "-c", "echo x > "+p+"; mkdir -p "+filepath.Dir(p)+" && echo x > "+p)
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote host path %s", p)
		}
	}
}

func escapeHostPaths(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{MemoryMB: 128, Pids: 64}))
	for line := range strings.Lines(sh(t, a, "cat /proc/self/cgroup")) {
		if f := strings.SplitN(strings.TrimSpace(line), ":", 3); len(f) != 3 || f[2] != "/" {
			t.Errorf("/proc/self/cgroup shows a host path: %q", line)
		}
	}
	mounts := sh(t, a, "cat /proc/mounts /proc/self/mountinfo")
	for _, p := range append(append(forbidden(s), hostDirsOf(a)...), "/sys/fs/cgroup") {
		if strings.Contains(mounts, p) {
			t.Errorf("the sandbox's mount table names host path %s:\n%s", p, mounts)
		}
	}
}

func escapeIdentity(t *testing.T, s Suite, d driver.Driver) {
	if !s.RootInside {
		a := create(t, d, spec(api.Limits{}))
		status := sh(t, a, "id -u; grep -E '^Cap(Eff|Bnd):' /proc/self/status")
		f := strings.Fields(status)
		if len(f) != 5 || f[0] == "0" || f[2] != "0000000000000000" || f[4] != "0000000000000000" {
			t.Errorf("default user: %q, want a uid other than 0 and no capabilities", status)
		}
		assertHostUID(t, a)
	}
	if !d.Capabilities().RootUser {
		return
	}
	sp := spec(api.Limits{})
	sp.Root = true
	r := create(t, d, sp)
	status := sh(t, r, "id -u; grep -E '^CapEff:' /proc/self/status")
	f := strings.Fields(status)
	if len(f) != 3 || f[0] != "0" {
		t.Fatalf("root sandbox: %q, want uid 0 inside", status)
	}
	eff, err := strconv.ParseUint(f[2], 16, 64)
	if err != nil || eff&(1<<21) != 0 || eff&(1<<19) != 0 || eff&(1<<16) != 0 {
		t.Errorf("root inside holds CAP_SYS_ADMIN, CAP_SYS_PTRACE or CAP_SYS_MODULE: CapEff %s", f[2])
	}
	assertHostUID(t, r)
}

// assertHostUID fails unless the sandbox's processes are not root on the
// host.
func assertHostUID(t *testing.T, sb *sandbox) {
	t.Helper()
	sh(t, sb, "sleep 4343 >/dev/null 2>&1 &")
	pids := commandsOf(sb.id, "sleep\x004343\x00")
	if len(pids) == 0 {
		t.Fatal("found no process of the sandbox on the host")
	}
	st, _ := os.ReadFile("/proc/" + pids[0] + "/status")
	for line := range strings.Lines(string(st)) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == "0" {
			t.Errorf("a sandbox process is root on the host: %s", line)
		}
	}
}

func escapeForkBomb(t *testing.T, d driver.Driver) {
	const limit = 64
	a := create(t, d, spec(api.Limits{Pids: limit}))
	done := make(chan api.ExecResult, 1)
	go func() {
		done <- runReq(t, a, api.ExecRequest{Cmd: []string{"/bin/bash", "-c", "b(){ b | b & }; b; sleep 10"}, TimeoutMS: 4000})
	}()
	peak := 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		peak = max(peak, len(processesOf(a.id)))
		time.Sleep(50 * time.Millisecond)
	}
	// The host still forks and runs a program.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "/bin/true").Run(); err != nil {
		t.Errorf("the host could not run a program during the fork bomb: %v", err)
	}
	<-done
	if peak > limit {
		t.Errorf("%d processes of the sandbox ran under a pids limit of %d", peak, limit)
	}
	if peak == 0 {
		t.Errorf("the fork bomb never ran")
	}
	waitAlive(t, a)
}

func escapeMemoryHog(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{MemoryMB: 64}))
	probe := uploadProbe(t, s, a)
	var before uint64
	oc, counts := d.(driver.OOMCounter)
	if counts {
		before, _ = oc.OOMKills(context.Background(), a.handle)
	}
	res := run(t, a, probe, "alloc", "256")
	if res.ExitCode == 0 || strings.Contains(res.Stdout, "allocated") {
		t.Fatalf("256 MiB allocated under a 64 MiB limit: %+v", res)
	}
	if res.Signal != "SIGKILL" && !s.MemoryRlimit {
		t.Errorf("the memory hog ended with %+v, want killed by SIGKILL", res)
	}
	if counts {
		after, err := oc.OOMKills(context.Background(), a.handle)
		if err != nil || after <= before {
			t.Errorf("OOM kills %d → %d (%v): the kill was not counted", before, after, err)
		}
	}
	waitAlive(t, a)
}

// waitAlive fails unless the sandbox answers a command within a few
// seconds (what an attack left behind may take a moment to be reaped).
func waitAlive(t *testing.T, sb *sandbox) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := run(t, sb, "echo", "alive")
		if res.ExitCode == 0 && res.Stdout == "alive\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox no longer runs commands: %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// escapeHostBudgets: what the kernel counts per user on the host (inotify
// instances, which a user namespace charges to its owner) cannot be taken
// whole by one sandbox: it gets its share, and the host still gets one.
func escapeHostBudgets(t *testing.T, s Suite, d driver.Driver) {
	a := create(t, d, spec(api.Limits{}))
	probe := uploadProbe(t, s, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := a.agent.Exec(ctx, api.ExecRequest{Cmd: []string{probe, "inotify", "100000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev, err := st.Next()
	if err != nil || ev.Type != api.ExecStdout {
		t.Fatalf("probe: %+v, %v", ev, err)
	}
	opened, _ := strconv.Atoi(strings.TrimSpace(string(ev.Data)))
	if opened >= 100000 || opened == 0 {
		t.Fatalf("the sandbox opened %d inotify instances; want some, and not without bound", opened)
	}
	// While the sandbox holds all it could get, the host still gets one.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("the host cannot make an inotify instance while a sandbox holds %d: %v", opened, err)
	}
	unix.Close(fd)
}
