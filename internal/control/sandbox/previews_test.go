package sandbox

import (
	"context"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestPreview: a port's setting is its tenant's to make; what the router
// asks of a preview is read as the system, whoever asks: the sandbox's
// tenant and state and whether the port is public. A running or paused
// sandbox is reachable (the door resumes a paused one), a stopped one is
// not; one that does not exist is not found.
func TestPreview(t *testing.T) {
	f := newFixture(t, nil)
	in := func(state api.SandboxState) string {
		sb := &store.Sandbox{State: state, Template: "host", Driver: f.drv.Name()}
		if err := f.st.CreateSandbox(f.ctx, sb); err != nil {
			t.Fatal(err)
		}
		return sb.ID
	}
	run, pause, stop := in(api.StateRunning), in(api.StatePaused), in(api.StateStopped)
	set, err := f.svc.SetPort(f.ctx, run, 3000, true)
	if err != nil || set.Port != 3000 || !set.Public || set.UpdatedAt.IsZero() {
		t.Fatalf("SetPort = %+v, %v", set, err)
	}
	if ps, err := f.svc.Ports(f.ctx, run); err != nil || len(ps) != 1 || ps[0] != set {
		t.Fatalf("Ports = %+v, %v; want %+v", ps, err, set)
	}
	stranger := tenancy.With(context.Background(), tenancy.Principal{TenantID: ids.New(), Role: api.RoleMember})
	if _, err := f.svc.SetPort(stranger, run, 3000, false); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("another tenant sets a port: %v", err)
	}
	if _, err := f.svc.Ports(stranger, run); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("another tenant lists the ports: %v", err)
	}
	anyone := context.Background()
	for _, tt := range []struct {
		name      string
		id        string
		port      int
		want      Preview
		reachable bool
	}{
		{"public port", run, 3000, Preview{TenantID: f.tenant, State: api.StateRunning, Public: true}, true},
		{"private port", run, 8080, Preview{TenantID: f.tenant, State: api.StateRunning}, true},
		{"paused", pause, 3000, Preview{TenantID: f.tenant, State: api.StatePaused}, true},
		{"stopped", stop, 3000, Preview{TenantID: f.tenant, State: api.StateStopped}, false},
	} {
		got, err := f.svc.Preview(anyone, tt.id, tt.port)
		if err != nil || got != tt.want || got.Reachable() != tt.reachable {
			t.Errorf("%s: %+v (reachable %v), %v; want %+v (reachable %v)", tt.name, got, got.Reachable(), err, tt.want, tt.reachable)
		}
	}
	if _, err := f.svc.Preview(anyone, ids.New(), 3000); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("a sandbox that does not exist: %v", err)
	}
}
