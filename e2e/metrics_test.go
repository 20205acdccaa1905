package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestMetrics: a namespace sandbox running a busy loop shows its CPU time
// rising and, once sampled, a CPU percent above zero, its memory, tasks
// and files; traffic through its egress proxy to a server on the host
// crosses its loopback, its only interface, and the network counters
// rise; `hutch stats --no-stream` prints its row.
func TestMetrics(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace", "--egress-allow-private", "127.0.0.0/8")
	c := s.client()
	ctx := context.Background()
	host := startHostServer(t)
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Network: &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	metrics := func() api.SandboxMetrics {
		t.Helper()
		m, err := c.SandboxMetrics(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// waitFor reads the metrics until ok holds.
	waitFor := func(what string, ok func(api.SandboxMetrics) bool) api.SandboxMetrics {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			m := metrics()
			if ok(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: metrics stay %+v", what, m)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if m := metrics(); len(m.Unsupported) > 0 {
		t.Fatalf("the namespace driver as root measures every figure; unsupported: %q", m.Unsupported)
	}

	loop, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do :; done"}})
	if err != nil {
		t.Fatal(err)
	}
	before := metrics()
	time.Sleep(time.Second)
	after := metrics()
	if after.CPU.UsageNS <= before.CPU.UsageNS || after.Memory.UsageBytes <= 0 || after.Pids.Current < 1 {
		t.Fatalf("with a busy loop: %+v, then %+v; want CPU time rising, memory and tasks", before, after)
	}
	busy := waitFor("a CPU percent once sampled", func(m api.SandboxMetrics) bool {
		return m.CPU.Percent > 0 && len(m.History) > 0 && m.History[len(m.History)-1].CPUPercent > 0
	})
	t.Logf("busy: cpu %+v, memory %+v, pids %+v, %d samples", busy.CPU, busy.Memory, busy.Pids, len(busy.History))
	if _, err := c.SignalProcess(ctx, sb.ID, loop.PID, "KILL", true); err != nil {
		t.Fatal(err)
	}

	// Its files: 4 MiB more.
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "head -c 4194304 /dev/urandom > blob"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write a file: %+v, %v", res, err)
	}
	waitFor("the disk counting the file", func(m api.SandboxMetrics) bool { return m.Disk.UsageBytes >= 4<<20 })

	// Through the egress proxy, which listens on the sandbox's loopback.
	net0 := metrics().Network
	url := fmt.Sprintf("http://127.0.0.1:%d/", host.Addr().(*net.TCPAddr).Port)
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", "http://127.0.0.1:3128", url}})
	if err != nil || res.Stdout != "200" {
		t.Fatalf("curl through the proxy: %+v, %v", res, err)
	}
	net1 := metrics().Network
	if net1.RxBytes <= net0.RxBytes || net1.TxBytes <= net0.TxBytes || net1.RxPackets <= net0.RxPackets {
		t.Errorf("network after a request through the proxy: %+v, then %+v; want it rising", net0, net1)
	}

	out, errOut, code := s.cli("", "stats", "--no-stream")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[0], "SANDBOX") || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, sb.ID+" ") }) {
		t.Fatalf("hutch stats --no-stream: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Logf("hutch stats --no-stream:\n%s", out)

	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	var apiErr *client.Error
	if _, err := c.SandboxMetrics(ctx, sb.ID); !errors.As(err, &apiErr) || apiErr.Code != "sandbox_not_running" {
		t.Errorf("metrics of a stopped sandbox: %v; want sandbox_not_running", err)
	}
}
