package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/driver/process"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/testutil"
)

// testConfig is a server on loopback ports of its own, with its metrics
// listener, on the process driver, logging JSON into log.
func testConfig(t *testing.T, log *bytes.Buffer) (config.Config, *slog.Logger) {
	t.Helper()
	bin, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	cfg := config.Default()
	cfg.Listen, cfg.MetricsListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = testutil.DataDir(t)
	killLeftovers(t, cfg.DataDir)
	cfg.AgentPath = filepath.Join(bin, "hutch-agent")
	cfg.Driver = process.Name
	cfg.WarmPool = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg, slog.New(slog.NewJSONHandler(log, nil))
}

// shutdownSteps are the steps a shutdown logged as done, in order, and
// those it logged as failed.
func shutdownSteps(t *testing.T, log *bytes.Buffer) (done, failed []string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(log.Bytes()))
	for dec.More() {
		var line struct{ Msg, Step string }
		if err := dec.Decode(&line); err != nil {
			t.Fatal(err)
		}
		switch line.Msg {
		case "shutdown step done":
			done = append(done, line.Step)
		case "shutdown step failed":
			failed = append(failed, line.Step)
		}
	}
	return done, failed
}

// TestShutdownSteps: a shutdown drains the servers first, then closes
// every part in reverse order of start, each step logged by its name.
func TestShutdownSteps(t *testing.T) {
	var log bytes.Buffer
	cfg, logger := testConfig(t, &log)
	s, err := Start(context.Background(), cfg, logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().String()
	s.Shutdown(context.Background())
	done, failed := shutdownSteps(t, &log)
	want := []string{"metrics", "api", "api streams", "e2b watchers", "preview tunnels", "tenants", "apps", "lifecycle loops",
		"process watchers", "node", "provider gateway", "drivers", "node connections", "store", "metrics listener", "listener"}
	if !slices.Equal(done, want) || len(failed) > 0 {
		t.Errorf("shutdown steps done %q, failed %q; want %q", done, failed, want)
	}
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("the API's address after shutdown: %v", err)
	} else {
		ln.Close()
	}
}

// TestPartialStart: a start that fails part way closes what it had
// opened, in reverse, and nothing after.
func TestPartialStart(t *testing.T) {
	var log bytes.Buffer
	cfg, logger := testConfig(t, &log)
	cfg.Providers = filepath.Join(t.TempDir(), "missing.yaml") // the gateway fails to open
	if _, err := Start(context.Background(), cfg, logger, "test"); err == nil {
		t.Fatal("Start with a missing providers file succeeded")
	}
	done, failed := shutdownSteps(t, &log)
	want := []string{"drivers", "node connections", "store", "metrics listener", "listener"}
	if !slices.Equal(done, want) || len(failed) > 0 {
		t.Errorf("shutdown steps done %q, failed %q; want %q", done, failed, want)
	}
}
