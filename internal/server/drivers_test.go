package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/namespace"
	"github.com/hutchdev/hutch/internal/driver/process"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestAutoFallsBack: when the namespace driver cannot be built here, auto
// picks the real process driver and says why.
func TestAutoFallsBack(t *testing.T) {
	bin, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	orig := factories[namespace.Name]
	t.Cleanup(func() { factories[namespace.Name] = orig })
	factories[namespace.Name] = func(config.Config, string, *slog.Logger) (driver.Driver, error) {
		return nil, errors.New("this kernel has no user namespaces")
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.AgentPath = filepath.Join(bin, "hutch-agent")
	cfg.WarmPool = 0
	d, why, err := selectDriver(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.(io.Closer).Close() })
	if d.Name() != process.Name || !strings.Contains(why, "this kernel has no user namespaces") || !strings.Contains(why, "DEGRADED") {
		t.Fatalf("auto chose %s because %q; want the process driver and the reason", d.Name(), why)
	}
}
