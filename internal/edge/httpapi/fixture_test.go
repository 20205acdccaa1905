package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	tenantsvc "github.com/hutchdev/hutch/internal/control/tenants"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// tenants is a real SQLite store holding two tenants, a and b, with an
// API key each.
type tenants struct {
	st         store.Store
	a, b       string // tenant ids
	keyA, keyB string
}

func newTenants(t *testing.T) tenants {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn := tenants{st: st}
	sys := tenancy.System(context.Background())
	for _, x := range []struct {
		name    string
		id, key *string
	}{{"a", &tn.a, &tn.keyA}, {"b", &tn.b, &tn.keyB}} {
		rec, _, key, err := auth.CreateTenant(sys, st, x.name)
		if err != nil {
			t.Fatal(err)
		}
		*x.id, *x.key = rec.ID, key
	}
	return tn
}

// apiFixture is the whole API as hutch serve wires it, over the fake
// driver (a real agent per sandbox in the test process) and a real SQLite
// store with two tenants: a client for each, and the drain that begins a
// shutdown.
type apiFixture struct {
	tenants
	srv    *httptest.Server
	drv    *fake.Driver
	svc    *sandbox.Service
	auth   *auth.Authenticator
	tsvc   *tenantsvc.Service // without apps, templates or volumes
	quotas *quota.Service
	events *events.Log
	drain  context.CancelFunc
	ca, cb *client.Client // tenant a's and b's
	ctx    context.Context
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	return newAPIFixtureWith(t, nil)
}

// newAPIFixtureWith is newAPIFixture with mutate applied to the sandbox
// service's config; the API shares its Quotas (without, quotas of no
// default: withQuotas sets some).
func newAPIFixtureWith(t *testing.T, mutate func(*sandbox.Config)) *apiFixture {
	t.Helper()
	f := &apiFixture{tenants: newTenants(t), ctx: context.Background()}
	f.drv = fake.New(fake.Config{Dir: t.TempDir()})
	if err := f.drv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(f.drv) })
	log := slog.New(slog.DiscardHandler)
	f.events = events.New(f.st, events.Config{})
	var err error
	cfg := sandbox.Config{
		Store: f.st, Drivers: driver.Single(f.drv), Events: f.events, Log: log, Node: "node-a",
		DefaultTemplate: "host",
		DefaultLimits:   api.Limits{MemoryMB: 256, CPU: 1, Pids: 64},
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		Settings:        api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxFileBytes:    1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if cfg.Quotas == nil {
		cfg.Quotas = quota.New(quota.Config{Store: f.st})
	}
	f.quotas = cfg.Quotas
	f.svc, err = sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.svc.Close)
	f.auth = &auth.Authenticator{Store: f.st, Quotas: f.quotas}
	f.tsvc, err = tenantsvc.New(tenantsvc.Config{Store: f.st, Keys: f.auth, Sandboxes: f.svc, Events: f.events, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.tsvc.Close)
	h := New(Config{Sandboxes: f.svc, Events: f.events, Auth: f.auth, Quotas: f.quotas,
		Tenants: f.tsvc, Log: log, Version: "test", StoreName: "sqlite", MaxBodyBytes: 1 << 20, MaxTarBytes: 8 << 20})
	// After the server (cleanups run last first), before the service:
	// what a WebSocket's handler still does ends first, as in hutch serve.
	t.Cleanup(h.Wait)
	// As hutch serve does: every request's context comes from one drain
	// context, cancelled when shutdown begins.
	f.srv = httptest.NewUnstartedServer(h)
	drain, cancel := context.WithCancel(context.Background())
	f.drain = cancel
	f.srv.Config.BaseContext = func(net.Listener) context.Context { return drain }
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	t.Cleanup(cancel)
	f.ca, f.cb = client.New(f.srv.URL, f.keyA), client.New(f.srv.URL, f.keyB)
	return f
}

// withQuotas gives the tenants of the fixture's store default quotas l.
func withQuotas(l api.QuotaLimits) func(*sandbox.Config) {
	return func(c *sandbox.Config) { c.Quotas = quota.New(quota.Config{Store: c.Store, Defaults: l}) }
}

// sandbox creates a sandbox of tenant a.
func (f *apiFixture) sandbox(t *testing.T) *api.Sandbox {
	t.Helper()
	sb, err := f.ca.CreateSandbox(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// raw sends a request with tenant a's key and returns the status, the
// headers and the error body, if the answer is one.
func (f *apiFixture) raw(t *testing.T, method, path, body string) (int, http.Header, api.ErrorBody) {
	t.Helper()
	var e api.Error
	status, h := f.send(t, f.keyA, method, path, body, &e, nil)
	return status, h, e.Error
}

// rawAs sends a request with key and returns the status and the error
// code, if the answer is an error; the body of a success is decoded into
// out when out is not nil.
func (f *apiFixture) rawAs(t *testing.T, key, method, path, body string, out any) (int, string) {
	t.Helper()
	var e api.Error
	status, _ := f.send(t, key, method, path, body, &e, out)
	return status, e.Error.Code
}

// send sends a request with key; an error answer must be in the error
// shape and is decoded into e, a success into out (when not nil).
func (f *apiFixture) send(t *testing.T, key, method, path, body string, e *api.Error, out any) (int, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400:
		if err := decodeStrict(resp.Body, e); err != nil {
			t.Fatalf("%s %s: %d with a body not in the error shape: %v", method, path, resp.StatusCode, err)
		}
	case out != nil:
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header
}
