package httpapi

import (
	"net/http"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// TestSandboxMetrics: a reader key reads a running sandbox's figures as
// its driver gives them; another tenant's sandbox is 404, a stopped one
// 409 sandbox_not_running.
func TestSandboxMetrics(t *testing.T) {
	f := newAPIFixture(t)
	sb := f.sandbox(t)
	if err := f.drv.SetStats(sb.ID, driver.Stats{CPUUsageNS: 42, MemoryBytes: 1 << 20, Pids: 2, RxBytes: 5, TxBytes: 6}); err != nil {
		t.Fatal(err)
	}
	_, reader := f.keyOf(t, f.keyA, "ro", api.RoleReader)
	var m api.SandboxMetrics
	path := "/v1/sandboxes/" + sb.ID + "/metrics"
	if status, code := f.rawAs(t, reader, "GET", path, "", &m); status != http.StatusOK {
		t.Fatalf("GET metrics with a reader key: %d %s", status, code)
	}
	if m.SandboxID != sb.ID || m.CPU.UsageNS != 42 || m.Memory.UsageBytes != 1<<20 || m.Pids.Current != 2 ||
		m.Network.RxBytes != 5 || m.Network.TxBytes != 6 || m.SampleEveryS == 0 || m.History == nil {
		t.Errorf("metrics = %+v", m)
	}
	if got, err := f.ca.SandboxMetrics(f.ctx, sb.ID); err != nil || got.CPU.UsageNS != 42 {
		t.Errorf("client SandboxMetrics = %+v, %v", got, err)
	}
	if status, code := f.rawAs(t, f.keyB, "GET", path, "", nil); status != http.StatusNotFound {
		t.Errorf("another tenant's sandbox: %d %s; want 404", status, code)
	}
	if _, err := f.ca.StopSandbox(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if status, code := f.rawAs(t, f.keyA, "GET", path, "", nil); status != http.StatusConflict || code != "sandbox_not_running" {
		t.Errorf("a stopped sandbox: %d %s; want 409 sandbox_not_running", status, code)
	}
}
