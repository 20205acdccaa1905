package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// TestReadOnly: the server's read-only settings have a key each, none of
// them a setting's (settings.New refuses one that is), and GET
// /v1/settings shows each, the host's bounds on admission among them.
func TestReadOnly(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Default()
	ro := readOnly(cfg)
	svc, err := settings.New(tenancy.System(context.Background()), settings.Config{Store: st, Events: events.New(st, events.Config{}), Flags: cfg.Settings(),
		ReadOnly: ro, Check: sandbox.CheckSettings, Apply: func(api.Settings) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	view := svc.Get().ReadOnly
	if len(view) != len(ro) {
		t.Errorf("%d read-only settings shown of %d: a key is named twice", len(view), len(ro))
	}
	if view["listen"] != cfg.Listen || view["data"] != cfg.DataDir {
		t.Errorf("read_only = %v, want the defaults' listen and data", view)
	}
	if view["max_memory_overcommit"] != cfg.MaxMemoryOvercommit || view["max_cpu_overcommit"] != cfg.MaxCPUOvercommit {
		t.Errorf("read_only = %v, want the defaults' host bounds", view)
	}
}
