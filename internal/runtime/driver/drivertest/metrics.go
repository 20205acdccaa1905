package drivertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// cpuSlack is what a CPU time read may lag the kernel's own count by: a
// scheduler tick of a running task, the 10 ms ticks of /proc.
const cpuSlack = 50 * time.Millisecond

// testMetrics: a driver that is a Meter measures a running sandbox. A busy
// loop's CPU time rises by about the time it ran, never more (one thread);
// it runs as a task and takes memory; once it is gone the CPU time stands
// still. What the driver names unsupported is not checked; network bytes
// are read wherever they are supported.
func testMetrics(t *testing.T, s Suite) {
	d := s.New(t)
	m, ok := d.(driver.Meter)
	if !ok {
		t.Skip("the driver measures no sandbox (not a driver.Meter)")
	}
	sb := create(t, d, spec(api.Limits{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	idle := readStats(t, m, sb)
	t.Logf("idle: %+v", idle)
	for _, name := range idle.Unsupported {
		if !slices.Contains([]string{"cpu", "memory", "pids", "network"}, name) {
			t.Errorf("Unsupported names %q, not one of cpu, memory, pids, network", name)
		}
	}
	supports := func(name string) bool { return !slices.Contains(idle.Unsupported, name) }

	p, err := sb.agent.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"/bin/sh", "-c", "while :; do :; done"}})
	if err != nil {
		t.Fatalf("start a busy loop: %v", err)
	}
	began := time.Now()
	first := readStats(t, m, sb)
	time.Sleep(time.Second)
	second := readStats(t, m, sb)
	elapsed := time.Since(began)
	if supports("cpu") {
		used := time.Duration(second.CPUUsageNS - first.CPUUsageNS)
		t.Logf("the loop used %v of CPU in %v", used, elapsed)
		if second.CPUUsageNS <= first.CPUUsageNS || used < elapsed/10 || used > elapsed+cpuSlack {
			t.Errorf("CPU time of a busy loop went from %d to %d ns in %v; want it to rise by about that", first.CPUUsageNS, second.CPUUsageNS, elapsed)
		}
	}
	if supports("pids") && second.Pids < 1 {
		t.Errorf("Pids = %d with a loop running", second.Pids)
	}
	if supports("memory") && second.MemoryBytes <= 0 {
		t.Errorf("MemoryBytes = %d with a loop running", second.MemoryBytes)
	}

	if _, err := sb.agent.SignalProcess(ctx, p.PID, api.SignalRequest{Signal: "KILL", Group: true}); err != nil {
		t.Fatalf("kill the loop: %v", err)
	}
	if _, err := sb.agent.WaitProcess(ctx, p.PID, 30*time.Second); err != nil {
		t.Fatalf("wait for the loop: %v", err)
	}
	still := readStats(t, m, sb)
	const quiet = 200 * time.Millisecond
	time.Sleep(quiet)
	again := readStats(t, m, sb)
	// Standing, but for the odd wake-up of what is left in the box: far
	// below what the loop burned in as long.
	loopRate := float64(second.CPUUsageNS-first.CPUUsageNS) / float64(elapsed)
	if grew := float64(again.CPUUsageNS - still.CPUUsageNS); supports("cpu") && (again.CPUUsageNS < still.CPUUsageNS || still.CPUUsageNS < second.CPUUsageNS || grew > loopRate*float64(quiet)/10) {
		t.Errorf("CPU time once the loop is gone: %d, then %d ns; want it standing at %d or more", still.CPUUsageNS, again.CPUUsageNS, second.CPUUsageNS)
	}
	if supports("network") {
		// A connection refused on the sandbox's loopback is still a SYN
		// and a RST through its network.
		out := sh(t, sb, "command -v curl >/dev/null || exit 0; curl -s -m 5 http://127.0.0.1:1/; echo sent")
		after := readStats(t, m, sb)
		t.Logf("network: %+v, then %+v", again, after)
		if after.TxPackets < again.TxPackets || after.RxPackets < again.RxPackets ||
			out != "" && (after.TxPackets == again.TxPackets || after.RxPackets == again.RxPackets) {
			t.Errorf("network counters after a connection (curl: %q): %+v, then %+v", out, again, after)
		}
	}
}

// readStats measures the sandbox, failing the test on error.
func readStats(t *testing.T, m driver.Meter, sb *sandbox) driver.Stats {
	t.Helper()
	st, err := m.Stats(context.Background(), sb.handle)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}
