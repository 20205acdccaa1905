package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
)

// TestQuotaTenant: the server's default quota binds a new tenant; an admin
// raises it with the CLI; the tenant reads its quotas and usage but cannot
// change them.
func TestQuotaTenant(t *testing.T) {
	s := startServer(t, "", "--tenant-max-sandboxes", "1")
	ctx := context.Background()
	admin := s.client()
	tn, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	acme := client.New(s.url, tn.Key.Secret)
	// The server's stop destroys the admin tenant's sandboxes only: the
	// tenant's own go first (cleanups run last registered first).
	t.Cleanup(func() {
		for sb, err := range acme.AllSandboxes(context.Background(), client.ListOptions{}) {
			if err != nil {
				break
			}
			if err := acme.DeleteSandbox(context.Background(), sb.ID); err != nil {
				t.Logf("destroy %s: %v", sb.ID, err)
			}
		}
	})
	if _, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if client.StatusCode(err) != http.StatusTooManyRequests || client.Code(err) != "quota_exceeded" || !strings.Contains(err.Error(), "sandboxes") {
		t.Fatalf("a second sandbox against the default quota of one: %v; want 429 quota_exceeded", err)
	}
	one := 1000
	if _, err := acme.SetTenantQuotas(ctx, tn.ID, api.Quotas{Sandboxes: &one}); !client.IsForbidden(err) {
		t.Fatalf("the tenant raises its own quota: %v; want 403", err)
	}

	out, errOut, code := s.cli("", "tenant", "quota", "set", "--sandboxes", "2", "--memory-mb", "4096", tn.ID)
	if code != 0 || !strings.Contains(out, "sandboxes") {
		t.Fatalf("hutch tenant quota set: %d\n%s%s", code, out, errOut)
	}
	if _, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Fatalf("a second sandbox once the admin raised the quota: %v", err)
	}
	out, errOut, code = s.cli("", "tenant", "quota", "get", "--json", tn.ID)
	if code != 0 {
		t.Fatalf("hutch tenant quota get: %d %s", code, errOut)
	}
	var q api.TenantQuotas
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatal(err)
	}
	if q.Limits.Sandboxes != 2 || q.Limits.MemoryMB != 4096 || q.Usage.Sandboxes != 2 || q.Usage.MemoryMB != 1024 || !q.DiskEnforced {
		t.Fatalf("quotas after the CLI set them: %+v", q)
	}
	mine, err := acme.TenantQuotas(ctx, tn.ID)
	if err != nil || mine.Usage != q.Usage {
		t.Fatalf("the tenant reads its own quotas: %+v, %v", mine, err)
	}
}

// TestQuotaHostMemory is the review's attack against the real binary,
// started with its memory promised no more than the host has:
// sandboxes at the server's largest memory limit until their limits would
// together pass this host's memory; that one is 503 insufficient_capacity.
func TestQuotaHostMemory(t *testing.T) {
	facts, err := hostinfo.Read()
	if err != nil {
		t.Fatal(err)
	}
	// hutch serve's reserves, with memory promised no more than the host
	// has: the defaults overcommit it 128 times (sandbox.Capacity), which
	// this host could not fill here.
	capacity := sandbox.HostCapacity(facts, sandbox.HostLimits{ReserveMemoryMB: 1024, ReservePids: 4096,
		MemoryOvercommit: 1, PidsOvercommit: 8})
	const max = 16384
	fits := capacity.MemoryMB / max
	if fits > 16 {
		t.Skipf("this host fits %d sandboxes of %d MiB", fits, max)
	}
	s := startServer(t, "", "--max-memory-overcommit", "1")
	ctx := context.Background()
	c := s.client()
	for i := range fits + 1 {
		_, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{MemoryMB: max, CPU: 0.5}})
		if i < fits {
			if err != nil {
				t.Fatalf("create %d: %v", i+1, err)
			}
			continue
		}
		if client.StatusCode(err) != http.StatusServiceUnavailable || client.Code(err) != "insufficient_capacity" {
			t.Fatalf("create %d, %d MiB promised on a host of %d MiB: %v; want 503 insufficient_capacity", i+1, (i+1)*max, facts.MemoryMB, err)
		}
	}
}
