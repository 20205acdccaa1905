package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
)

// TestAttackHostMemoryAPI is the review's attack through the API, on this
// host's real memory: one key asks for sandboxes at the server's largest
// memory limit until they would together pass the host's memory. The one
// that would is 503 insufficient_capacity; every one used to be created.
func TestAttackHostMemoryAPI(t *testing.T) {
	facts, err := hostinfo.Read()
	if err != nil {
		t.Skipf("host facts: %v", err)
	}
	capacity := sandbox.HostCapacity(facts, sandbox.HostLimits{ReserveMemoryMB: 1024, ReservePids: 4096,
		MemoryOvercommit: 1, PidsOvercommit: 1, CPUOvercommit: 8})
	max := api.Limits{MemoryMB: 16384, CPU: 16, Pids: 16384}
	f := newAPIFixtureWith(t, func(c *sandbox.Config) { c.MaxLimits, c.Capacity = max, capacity })
	fits := capacity.MemoryMB / max.MemoryMB
	if fits > 32 {
		t.Skipf("this host fits %d sandboxes of %d MiB; too many to create here", fits, max.MemoryMB)
	}
	body := fmt.Sprintf(`{"limits":{"memory_mb":%d,"pids":64}}`, max.MemoryMB)
	for i := range fits + 1 {
		status, _, e := f.raw(t, "POST", "/v1/sandboxes", body)
		if i < fits {
			if status != http.StatusCreated {
				t.Fatalf("create %d: %d %s %s", i+1, status, e.Code, e.Message)
			}
			continue
		}
		if status != http.StatusServiceUnavailable || e.Code != "insufficient_capacity" {
			t.Fatalf("create %d, %d MiB promised on a host of %d MiB: %d %s; want 503 insufficient_capacity",
				i+1, (i+1)*max.MemoryMB, facts.MemoryMB, status, e.Code)
		}
		if !strings.Contains(e.Message, "memory") {
			t.Errorf("message %q does not name memory", e.Message)
		}
	}
}

// TestQuotasAPI: an admin reads and sets any tenant's quotas; a tenant's
// own keys read its quotas and usage but cannot change them; another
// tenant's are not found; a create past a quota is 429 quota_exceeded.
func TestQuotasAPI(t *testing.T) {
	f := newAPIFixtureWith(t, withQuotas(api.QuotaLimits{Sandboxes: 10, MemoryMB: 4096}))
	_, admin := f.adminKey(t, "admin")
	_, readerB := f.keyOf(t, f.keyB, "reader", api.RoleReader)
	path := "/v1/tenants/" + f.b + "/quotas"

	// The member cannot raise its own quotas, nor anyone else's.
	for _, key := range []string{f.keyB, readerB} {
		if status, code := f.rawAs(t, key, "PUT", path, `{"sandboxes":1000}`, nil); status != http.StatusForbidden || code != "admin_required" {
			t.Errorf("tenant b's own key raises its quotas: %d %s, want 403 admin_required", status, code)
		}
	}
	if status, code := f.rawAs(t, f.keyA, "PUT", path, `{"sandboxes":0}`, nil); status != http.StatusForbidden || code != "admin_required" {
		t.Errorf("tenant a's member sets b's quotas: %d %s, want 403 admin_required", status, code)
	}
	if status, code := f.rawAs(t, f.keyA, "GET", path, "", nil); status != http.StatusNotFound || code != "tenant_not_found" {
		t.Errorf("tenant a reads b's quotas: %d %s, want 404 tenant_not_found", status, code)
	}

	var got api.TenantQuotas
	if status, code := f.rawAs(t, admin, "PUT", path, `{"sandboxes":1,"memory_mb":0,"disk_mb":2048}`, &got); status != http.StatusOK {
		t.Fatalf("admin sets b's quotas: %d %s", status, code)
	}
	one, zero, disk := 1, 0, 2048
	want := api.TenantQuotas{TenantID: f.b,
		Set:    api.Quotas{Sandboxes: &one, MemoryMB: &zero, DiskMB: &disk},
		Limits: api.QuotaLimits{Sandboxes: 1, MemoryMB: 0, DiskMB: 2048}, DiskEnforced: true,
		Usage: api.QuotaUsage{Keys: 2}} // b's first key and its reader's
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PUT answer (-want +got):\n%s", diff)
	}

	if _, err := f.cb.CreateSandbox(f.ctx, api.CreateSandboxRequest{Limits: &api.Limits{MemoryMB: 512}}); err != nil {
		t.Fatal(err)
	}
	status, code := f.rawAs(t, f.keyB, "POST", "/v1/sandboxes", `{}`, nil)
	if status != http.StatusTooManyRequests || code != "quota_exceeded" {
		t.Fatalf("a second sandbox against a quota of one: %d %s, want 429 quota_exceeded", status, code)
	}
	// Tenant a is bound by the defaults, not by b's quotas.
	f.sandbox(t)
	f.sandbox(t)

	for _, key := range []string{f.keyB, readerB, admin} {
		got = api.TenantQuotas{}
		if status, code := f.rawAs(t, key, "GET", path, "", &got); status != http.StatusOK {
			t.Fatalf("GET b's quotas: %d %s", status, code)
		}
		want.Usage = api.QuotaUsage{Sandboxes: 1, MemoryMB: 512, CPU: 1, Pids: 64, Keys: 2}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET (-want +got):\n%s", diff)
		}
	}

	// null and absent go back to the server's default.
	got = api.TenantQuotas{}
	if status, code := f.rawAs(t, admin, "PUT", path, `{"sandboxes":null}`, &got); status != http.StatusOK {
		t.Fatalf("admin resets b's quotas: %d %s", status, code)
	}
	if got.Set != (api.Quotas{}) || got.Limits != (api.QuotaLimits{Sandboxes: 10, MemoryMB: 4096}) {
		t.Errorf("after a reset: set %+v, limits %+v; want none set and the defaults", got.Set, got.Limits)
	}
	for _, body := range []string{`{"sandboxes":-1}`, `{"cpu":-0.5}`, `{"memory_mb":1.5}`, `{"pods":3}`} {
		if status, code := f.rawAs(t, admin, "PUT", path, body, nil); status != http.StatusBadRequest {
			t.Errorf("PUT %s: %d %s, want 400", body, status, code)
		}
	}
	if status, code := f.rawAs(t, admin, "GET", "/v1/tenants/01jzzzzzzzzzzzzzzzzzzzzzzz/quotas", "", nil); status != http.StatusNotFound || code != "tenant_not_found" {
		t.Errorf("quotas of a missing tenant: %d %s, want 404 tenant_not_found", status, code)
	}
}

// TestGetTenant: a tenant's keys read it, admins read any, others find
// nothing.
func TestGetTenant(t *testing.T) {
	f := newAPIFixture(t)
	_, admin := f.adminKey(t, "admin")
	for _, key := range []string{f.keyB, admin} {
		var tn api.Tenant
		if status, code := f.rawAs(t, key, "GET", "/v1/tenants/"+f.b, "", &tn); status != http.StatusOK || tn.ID != f.b || tn.Name != "b" || tn.Key != nil {
			t.Errorf("GET tenant b: %d %s %+v", status, code, tn)
		}
	}
	if status, code := f.rawAs(t, f.keyA, "GET", "/v1/tenants/"+f.b, "", nil); status != http.StatusNotFound || code != "tenant_not_found" {
		t.Errorf("tenant a reads b: %d %s, want 404 tenant_not_found", status, code)
	}
}
