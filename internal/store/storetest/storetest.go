// Package storetest is the behaviour every store.Store must show. Each
// implementation's tests call Run with a function that opens a fresh, empty
// store; the suite covers tenant isolation, filters, pagination, atomic
// updates, conflicts, time round trips and the event log's order.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Run runs the suite. open must return a new, empty store and close it with
// t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"Tenants", testTenants},
		{"TenantAccess", testTenantAccess},
		{"TenantQuotas", testTenantQuotas},
		{"TenantStates", testTenantStates},
		{"TenantNotActive", testTenantNotActive},
		{"DeleteByTenant", testDeleteByTenant},
		{"Keys", testKeys},
		{"KeyIsolation", testKeyIsolation},
		{"SandboxRoundTrip", testSandboxRoundTrip},
		{"SandboxDefaults", testSandboxDefaults},
		{"SandboxConflict", testSandboxConflict},
		{"SandboxIsolation", testSandboxIsolation},
		{"NoPrincipal", testNoPrincipal},
		{"ListFilters", testListFilters},
		{"ListPagination", testListPagination},
		{"ListLimits", testListLimits},
		{"UpdateSandbox", testUpdateSandbox},
		{"UpdateAborts", testUpdateAborts},
		{"UpdateConcurrent", testUpdateConcurrent},
		{"Transition", testTransition},
		{"AllSandboxes", testAllSandboxes},
		{"CountSandboxes", testCountSandboxes},
		{"DeleteSandbox", testDeleteSandbox},
		{"Usage", testUsage},
		{"EventRoundTrip", testEventRoundTrip},
		{"EventOrder", testEventOrder},
		{"EventPaging", testEventPaging},
		{"EventFilters", testEventFilters},
		{"EventIsolation", testEventIsolation},
		{"EventNoPrincipal", testEventNoPrincipal},
		{"EventsOfDeletedSandbox", testEventsOfDeletedSandbox},
		{"EventTrim", testEventTrim},
		{"Secrets", testSecrets},
		{"Templates", testTemplates},
		{"Snapshots", testSnapshots},
		{"Volumes", testVolumes},
		{"Settings", testSettings},
		{"Apps", testApps},
		{"Nodes", testNodes},
		{"NodeAge", testNodeAge},
		{"Leases", testLeases},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

// system is the control plane's context.
func system() context.Context {
	return tenancy.System(context.Background())
}

// as returns a context acting as a key of tenantID with role.
func as(tenantID, role string) context.Context {
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: tenantID, KeyID: "k-" + tenantID, Role: role})
}

// newTenant creates a tenant and returns it with a member's context in it.
func newTenant(t *testing.T, s store.Store, name string) (store.Tenant, context.Context) {
	t.Helper()
	tn := store.Tenant{ID: ids.New(), Name: name + "-" + ids.Token(4)}
	if err := s.CreateTenant(system(), tn); err != nil {
		t.Fatalf("CreateTenant(%q): %v", tn.Name, err)
	}
	return tn, as(tn.ID, api.RoleMember)
}

// newKey returns a key record for tenantID.
func newKey(tenantID, name, role string) store.Key {
	id := ids.Token(8)[:12]
	h := sha256.Sum256([]byte("secret-" + id))
	return store.Key{ID: id, TenantID: tenantID, Name: name, Role: role, Prefix: "hk_" + id, Hash: h[:]}
}

// newSandbox creates a running sandbox with labels in ctx's tenant.
func newSandbox(t *testing.T, s store.Store, ctx context.Context, labels map[string]string) *store.Sandbox {
	t.Helper()
	sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "process", Labels: labels}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	return sb
}

// wantErr fails t unless err is of class and, if code is set, has that code.
func wantErr(t *testing.T, what string, err, class error, code string) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Errorf("%s: error %v, want class %v", what, err, class)
		return
	}
	if code == "" {
		return
	}
	if _, got, _ := errdefs.Classify(err); got != code {
		t.Errorf("%s: code %q, want %q (error %v)", what, got, code, err)
	}
}
