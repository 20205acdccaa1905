package httpapi

import (
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/driver"
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

// TestSandboxMetricsSchemas holds the schemas of the answer to the JSON
// names of their api types.
func TestSandboxMetricsSchemas(t *testing.T) {
	b, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"SandboxMetrics": api.SandboxMetrics{}, "CPUStats": api.CPUStats{}, "MemStats": api.MemStats{},
		"PidStats": api.PidStats{}, "DiskStats": api.DiskStats{}, "NetStats": api.NetStats{}, "Sample": api.Sample{},
	} {
		s, ok := spec.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s is missing", name)
			continue
		}
		var inSpec, inGo []string
		for p := range s.Properties {
			inSpec = append(inSpec, p)
		}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			inGo = append(inGo, tag)
		}
		slices.Sort(inSpec)
		slices.Sort(inGo)
		if !slices.Equal(inSpec, inGo) {
			t.Errorf("schema %s has %q, api.%s %q", name, inSpec, rt.Name(), inGo)
		}
	}
}
