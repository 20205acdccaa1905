package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1536: "1.5KiB", 64 << 20: "64.0MiB", 3 << 30: "3.0GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStatsColumns(t *testing.T) {
	full := &api.SandboxMetrics{
		CPU:     api.CPUStats{Percent: 99.5},
		Memory:  api.MemStats{UsageBytes: 64 << 20, LimitBytes: 256 << 20},
		Network: api.NetStats{RxBytes: 2048, TxBytes: 100},
		Pids:    api.PidStats{Current: 3},
		Disk:    api.DiskStats{UsageBytes: 1 << 20, LimitBytes: 1 << 30},
	}
	for _, tc := range []struct {
		name string
		r    statsRow
		want []string
	}{
		{"every figure", statsRow{id: "a", m: full}, []string{"a", "99.50%", "64.0MiB / 256.0MiB", "25.00%", "2.0KiB / 100B", "3", "1.0MiB / 1.0GiB"}},
		{"no limits, no network", statsRow{id: "b", m: &api.SandboxMetrics{Memory: api.MemStats{UsageBytes: 10}, Unsupported: []string{"network"}}},
			[]string{"b", "0.00%", "10B / -", "-", "-", "0", "0B"}},
		{"not running", statsRow{id: "c"}, []string{"c", "-", "-", "-", "-", "-", "-"}},
	} {
		if diff := cmp.Diff(tc.want, statsColumns(tc.r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestStatsNoStream runs `hutch stats --no-stream` against a server of two
// sandboxes, one running and one stopped: with no id it shows the running
// one; a stopped one named shows dashes; an unknown one named fails.
func TestStatsNoStream(t *testing.T) {
	const running, stopped = "01m81b6tzw5q2hcj7by01dvd6v", "01m81b6tzw5q2hcj7by01dvd6w"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		conflict := func() {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: "sandbox_not_running", Message: "stopped"}})
		}
		switch r.URL.Path {
		case "/v1/sandboxes":
			json.NewEncoder(w).Encode(api.SandboxList{Sandboxes: []api.Sandbox{{ID: running, State: api.StateRunning}, {ID: stopped, State: api.StateStopped}}})
		case "/v1/sandboxes/" + running + "/metrics":
			json.NewEncoder(w).Encode(api.SandboxMetrics{SandboxID: running, CPU: api.CPUStats{Percent: 12.5}, Pids: api.PidStats{Current: 4}})
		case "/v1/sandboxes/" + stopped + "/metrics":
			conflict()
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(api.Error{Error: api.ErrorBody{Code: "sandbox_not_found", Message: "no such sandbox"}})
		}
	}))
	defer srv.Close()
	vars := map[string]string{"HUTCH_URL": srv.URL, "HUTCH_API_KEY": "hk_x_y"}
	stats := func(args ...string) (string, string, int) {
		e, errb := testEnv(vars)
		code := run(context.Background(), e, append([]string{"stats", "--no-stream"}, args...))
		return e.stdout.(interface{ String() string }).String(), errb.String(), code
	}

	out, errOut, code := stats()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "SANDBOX") || !strings.HasPrefix(lines[1], running) || !strings.Contains(lines[1], "12.50%") {
		t.Fatalf("hutch stats --no-stream: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = stats(stopped)
	if lines = strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != stopped+" - - - - - -" {
		t.Errorf("hutch stats --no-stream STOPPED: exit %d, %q", code, out)
	}
	if _, errOut, code = stats("01m81b6tzw5q2hcj7by01dvd6x"); code != 1 || !strings.Contains(errOut, "sandbox_not_found") {
		t.Errorf("hutch stats --no-stream UNKNOWN: exit %d, stderr %q", code, errOut)
	}
}
