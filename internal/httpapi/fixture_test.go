package httpapi

import (
	"context"
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
	"github.com/hutchdev/hutch/internal/auth"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/fake"
	"github.com/hutchdev/hutch/internal/sandbox"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/tenancy"
)

// apiFixture is the whole API as hutch serve wires it, over the fake
// driver (a real agent per sandbox in the test process) and a real SQLite
// store: two tenants, a client for each, and the drain that begins a
// shutdown.
type apiFixture struct {
	srv    *httptest.Server
	drv    *fake.Driver
	svc    *sandbox.Service
	drain  context.CancelFunc
	a, b   *client.Client
	keyA   string
	ctx    context.Context
	logDir string
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	drv := fake.New(fake.Config{Dir: t.TempDir()})
	if err := drv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(drv) })
	log := slog.New(slog.DiscardHandler)
	events := sandbox.NewEventLog(st)
	svc, err := sandbox.New(sandbox.Config{
		Store: st, Drivers: driver.Single(drv), Events: events, Log: log, Node: "node-a",
		DefaultTemplate: "host",
		DefaultLimits:   api.Limits{MemoryMB: 256, CPU: 1, Pids: 64},
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		DefaultTimeout:  time.Hour, MaxTimeout: time.Hour,
		MaxFileBytes: 1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	sys := tenancy.System(context.Background())
	_, _, keyA, err := auth.CreateTenant(sys, st, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, _, keyB, err := auth.CreateTenant(sys, st, "b")
	if err != nil {
		t.Fatal(err)
	}
	h := New(Config{Sandboxes: svc, Events: events.Notifier(), Store: st, Auth: &auth.Authenticator{Store: st},
		Log: log, Version: "test", MaxBodyBytes: 1 << 20, MaxTarBytes: 8 << 20})
	f := &apiFixture{drv: drv, svc: svc, keyA: keyA, ctx: context.Background()}
	// As hutch serve does: every request's context comes from one drain
	// context, cancelled when shutdown begins.
	f.srv = httptest.NewUnstartedServer(h)
	drain, cancel := context.WithCancel(context.Background())
	f.drain = cancel
	f.srv.Config.BaseContext = func(net.Listener) context.Context { return drain }
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	t.Cleanup(cancel)
	f.a, f.b = client.New(f.srv.URL, keyA), client.New(f.srv.URL, keyB)
	return f
}

// sandbox creates a sandbox of tenant a.
func (f *apiFixture) sandbox(t *testing.T) *api.Sandbox {
	t.Helper()
	sb, err := f.a.CreateSandbox(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// raw sends a request with tenant a's key and returns the status, the
// headers and the error body, if the answer is one.
func (f *apiFixture) raw(t *testing.T, method, path, body string) (int, http.Header, api.ErrorBody) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	if resp.StatusCode >= 400 {
		if err := decodeStrict(resp.Body, &e); err != nil {
			t.Fatalf("%s %s: %d with a body not in the error shape: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, resp.Header, e.Error
}
