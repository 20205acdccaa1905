package sandbox

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestDirectory: the directory says whose a sandbox is and its state, as
// its caller may see it, and counts every tenant's sandboxes by state and
// driver for the system alone.
func TestDirectory(t *testing.T) {
	f := newFixture(t, nil)
	d := NewDirectory(f.st)
	in := func(state api.SandboxState, driver string) string {
		sb := &store.Sandbox{State: state, Template: "host", Driver: driver}
		if err := f.st.CreateSandbox(f.ctx, sb); err != nil {
			t.Fatal(err)
		}
		return sb.ID
	}
	run := in(api.StateRunning, "namespace")
	in(api.StateRunning, "namespace")
	in(api.StateStopped, "process")
	sys := tenancy.System(context.Background())

	if got, err := d.OwnerOf(sys, run); err != nil || got != (Owner{TenantID: f.tenant, State: api.StateRunning}) {
		t.Errorf("OwnerOf = %+v, %v", got, err)
	}
	if _, err := d.OwnerOf(sys, ids.New()); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("OwnerOf a sandbox that does not exist: %v", err)
	}
	stranger := tenancy.With(context.Background(), tenancy.Principal{TenantID: ids.New(), Role: api.RoleMember})
	if _, err := d.OwnerOf(stranger, run); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("OwnerOf another tenant's sandbox: %v", err)
	}

	counts, err := d.CountSandboxes(sys)
	if err != nil {
		t.Fatal(err)
	}
	want := []Count{{State: api.StateRunning, Driver: "namespace", N: 2}, {State: api.StateStopped, Driver: "process", N: 1}}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("CountSandboxes (-want +got):\n%s", diff)
	}
	if _, err := d.CountSandboxes(f.ctx); !errdefs.HasCode(err, "system_only") {
		t.Errorf("CountSandboxes by a tenant: %v", err)
	}
}
