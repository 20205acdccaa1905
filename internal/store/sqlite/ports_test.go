package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestPorts: port settings are set, replaced, listed in port order, kept
// across a reopen, scoped to their tenant and gone with their sandbox.
func TestPorts(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	sys := tenancy.System(context.Background())
	newTenant := func() (context.Context, *store.Sandbox) {
		tn := store.Tenant{ID: ids.New(), Name: "t-" + ids.Token(4)}
		if err := s.CreateTenant(sys, tn); err != nil {
			t.Fatal(err)
		}
		ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
		sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "namespace"}
		if err := s.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		return ctx, sb
	}
	a, sbA := newTenant()
	b, sbB := newTenant()

	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, p := range []store.PortSetting{
		{SandboxID: sbA.ID, Port: 8080, Public: true, UpdatedAt: at},
		{SandboxID: sbA.ID, Port: 3000, Public: true, UpdatedAt: at},
		{SandboxID: sbA.ID, Port: 3000, Public: false, UpdatedAt: at.Add(time.Second)},
	} {
		if err := s.SetPort(a, &p); err != nil || p.TenantID != sbA.TenantID {
			t.Fatalf("SetPort(%+v): %v", p, err)
		}
	}
	want := []store.PortSetting{
		{SandboxID: sbA.ID, TenantID: sbA.TenantID, Port: 3000, Public: false, UpdatedAt: at.Add(time.Second)},
		{SandboxID: sbA.ID, TenantID: sbA.TenantID, Port: 8080, Public: true, UpdatedAt: at},
	}
	got, err := s.ListPorts(a, sbA.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ListPorts (-want +got):\n%s", diff)
	}

	// Another tenant sees neither the sandbox nor its ports; the system
	// (the router) sees both.
	if _, err := s.ListPorts(b, sbA.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("ListPorts of another tenant's sandbox: %v", err)
	}
	if _, err := s.GetPort(b, sbA.ID, 8080); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetPort of another tenant's sandbox: %v", err)
	}
	if err := s.SetPort(b, &store.PortSetting{SandboxID: sbA.ID, Port: 9000, Public: true}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("SetPort on another tenant's sandbox: %v", err)
	}
	if p, err := s.GetPort(sys, sbA.ID, 8080); err != nil || !p.Public {
		t.Errorf("GetPort as the system: %+v, %v", p, err)
	}
	if _, err := s.GetPort(sys, sbA.ID, 9000); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetPort of a port never set: %v", err)
	}
	if _, err := s.GetPort(context.Background(), sbA.ID, 8080); !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("GetPort without a principal: %v", err)
	}
	if l, err := s.ListPorts(b, sbB.ID); err != nil || len(l) != 0 {
		t.Errorf("ListPorts of a sandbox without settings: %v, %v", l, err)
	}
	for _, port := range []int{0, -1, 65536} {
		if err := s.SetPort(a, &store.PortSetting{SandboxID: sbA.ID, Port: port}); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("SetPort(port %d): %v", port, err)
		}
	}

	// Kept across a restart.
	s.Close()
	s = open(t, path)
	defer s.Close()
	got, err = s.ListPorts(a, sbA.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ListPorts after reopen (-want +got):\n%s", diff)
	}
	// Gone with the sandbox's row.
	if err := s.DeleteSandbox(sys, sbA.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPort(sys, sbA.ID, 8080); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetPort after the sandbox's row went: %v", err)
	}
}
