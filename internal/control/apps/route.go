package apps

import (
	"context"
	"errors"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Host is an app as the router serves it at its host: whose it is and
// whether everyone may reach it. It holds the app as this service last
// wrote it, which Target routes from.
type Host struct {
	ID       string
	TenantID string
	Name     string
	Public   bool

	app *store.App
}

// ValidName reports whether name may be an app's (store.CheckAppName): a
// host whose first label is not one is no app's.
func ValidName(name string) bool { return store.CheckAppName(name) == nil }

// Route is where a request to an app's role goes.
type Route struct {
	AppID    string
	TenantID string
	Name     string
	Public   bool
	Role     string
	Sandbox  string
	Port     int
}

// routes is the router's view of the apps: each app as last written by
// this service, and each app sandbox's web port as its supervisor last
// reported it.
//
// Every write of an app happens under the app's lock and puts what it
// wrote here before the lock goes, so puts come in the order the writes
// committed. A read of the store that missed here only fills a gap
// (putIfAbsent): a write that came meanwhile wins. A deleted app's id is
// remembered, so a read that raced the delete does not bring it back.
type routes struct {
	mu      sync.RWMutex
	byName  map[string]*store.App
	ports   map[string]int  // sandbox id → web port
	deleted map[string]bool // app ids
}

func (r *routes) put(a *store.App) { r.store(a, true) }

func (r *routes) putIfAbsent(a *store.App) { r.store(a, false) }

func (r *routes) store(a *store.App, replace bool) {
	c := *a
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deleted[a.ID] {
		return
	}
	if r.byName == nil {
		r.byName = map[string]*store.App{}
	}
	if old, ok := r.byName[a.Name]; ok && !replace && old.ID == a.ID {
		return
	}
	r.byName[a.Name] = &c
}

func (r *routes) drop(a *store.App) {
	r.mu.Lock()
	if r.deleted == nil {
		r.deleted = map[string]bool{}
	}
	r.deleted[a.ID] = true
	delete(r.byName, a.Name)
	for _, id := range []string{a.Live, a.Dev, a.PreviousLive} {
		delete(r.ports, id)
	}
	r.mu.Unlock()
}

func (r *routes) app(name string) *store.App {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

func (r *routes) port(sandboxID string) (int, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.ports[sandboxID]
	return p, ok
}

func (r *routes) setPort(sandboxID string, port int) {
	r.mu.Lock()
	if r.ports == nil {
		r.ports = map[string]int{}
	}
	r.ports[sandboxID] = port
	r.mu.Unlock()
}

func (r *routes) forgetPort(sandboxID string) {
	r.mu.Lock()
	delete(r.ports, sandboxID)
	r.mu.Unlock()
}

// Host finds an app by name for the router, as the system: nil when
// there is none.
func (s *Service) Host(ctx context.Context, name string) (*Host, error) {
	if a := s.cache.app(name); a != nil {
		return hostOf(a), nil
	}
	a, err := s.apps.AppByName(tenancy.System(ctx), name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.cache.putIfAbsent(a)
	if c := s.cache.app(name); c != nil {
		return hostOf(c), nil
	}
	return nil, nil // deleted meanwhile
}

func hostOf(a *store.App) *Host {
	return &Host{ID: a.ID, TenantID: a.TenantID, Name: a.Name, Public: a.Public, app: a}
}

// Target is where a request to role of the app at h goes: the sandbox
// the role points at and its web process's port, making sure its
// supervisor runs (after the sandbox was stopped and started again its
// agent is new) and starting a stopped sandbox. A paused one resumes at
// its tunnel.
func (s *Service) Target(ctx context.Context, h *Host, role string) (Route, error) {
	a := h.app
	r := Route{AppID: a.ID, TenantID: a.TenantID, Name: a.Name, Public: a.Public, Role: role, Sandbox: a.Live}
	if role == api.RoleDev {
		r.Sandbox = a.Dev
	}
	if r.Sandbox == "" {
		return r, errdefs.Conflict("app_not_ready", "app %s has no %s sandbox yet (state %s)", a.Name, role, a.State)
	}
	if p, ok := s.cache.port(r.Sandbox); ok {
		r.Port = p
		return r, nil
	}
	ctx = asTenant(ctx, a.TenantID)
	st, err := s.supervise(ctx, a, r.Sandbox, role)
	if err != nil {
		return r, err
	}
	r.Port = webPort(st)
	return r, nil
}

// Guard refuses (409 app_sandbox) to let a sandbox an app of the caller's
// tenant points at be destroyed on its own; any other sandbox, one whose
// label names no such app included, passes.
func (s *Service) Guard(ctx context.Context, sandboxID string) error {
	sb, err := s.sbx.Get(ctx, sandboxID)
	if err != nil || sb.Labels[LabelApp] == "" {
		return nil // the destroy itself answers for a missing sandbox
	}
	a, err := s.get(ctx, sb.Labels[LabelApp])
	if err != nil {
		return nil
	}
	for role, id := range map[string]string{api.RoleLive: a.Live, api.RoleDev: a.Dev, "previous_live": a.PreviousLive} {
		if id == sandboxID {
			return errdefs.Conflict("app_sandbox", "sandbox %s is the %s sandbox of app %s: delete the app (DELETE /v1/apps/%s), or promote or roll back", sandboxID, role, a.Name, a.ID)
		}
	}
	return nil
}

// Unreachable tells the service a request to sandbox id found nothing
// listening: its supervisor is checked again on the next request.
func (s *Service) Unreachable(sandboxID string) { s.cache.forgetPort(sandboxID) }
