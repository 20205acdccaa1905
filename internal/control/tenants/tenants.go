// Package tenants owns a tenant's life: made with its first key, shown,
// suspended and resumed, and deleted with everything it owns (docs:
// "A tenant's life"). It is the one door to a tenant as a whole; what a
// tenant owns it reaches through the doors of those resources (the
// sandbox service, apps, templates, volumes) acting as the tenant, and
// the store for what has no door (keys, secrets, events, records).
//
// A tenant's state changes only by store.TransitionTenant, which names the
// states it expects (through transition, which tells the keys kept in
// memory), and only an admin's key or the system changes it
// (the API's route and the store both check). A tenant never suspends or
// deletes itself, and the admin tenant (the one made on first start, or
// any holding an admin key) is never suspended or deleted.
//
// Lifecycle: New (no side effects), Recover once the sandbox service and
// the apps layer have recovered (it runs on the deletions a restart cut
// short and stops what a suspended tenant still runs, in the background),
// Close at shutdown, which cancels that work and waits for it.
package tenants

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/keylock"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// Sandboxes is what the service asks of the sandbox service, always as
// the tenant whose sandboxes they are.
type Sandboxes interface {
	List(ctx context.Context, opts sandbox.ListOptions) (api.SandboxList, error)
	Stop(ctx context.Context, id string) (api.Sandbox, error)
	Destroy(ctx context.Context, id string) error
	ListSnapshots(ctx context.Context, sandbox string) ([]api.Snapshot, error)
	DeleteSnapshot(ctx context.Context, id string) error
}

// Apps is what a deletion asks of the apps layer (apps.Service).
type Apps interface {
	List(ctx context.Context) (api.AppList, error)
	Delete(ctx context.Context, id string) error
}

// Templates is what a deletion asks of the template service.
type Templates interface {
	List(ctx context.Context) (api.TemplateList, error)
	Delete(ctx context.Context, name string) error
}

// Volumes is what a deletion asks of the volume service.
type Volumes interface {
	List(ctx context.Context) (api.VolumeList, error)
	Delete(ctx context.Context, name string) error
}

// Keys revokes a tenant's keys and ends their requests, and is told when
// a tenant's state changes, to forget the keys it keeps in memory
// (auth.Authenticator).
type Keys interface {
	RevokeTenant(ctx context.Context, tenantID string) ([]string, error)
	TenantChanged(tenantID string)
}

// Config is what the service works with. Store, Keys, Sandboxes and
// Events are required; a nil Apps, Templates or Volumes is a server
// without that part, whose records of a deleted tenant the store erases
// alone.
type Config struct {
	Store     store.Store
	Keys      Keys
	Sandboxes Sandboxes
	Apps      Apps
	Templates Templates
	Volumes   Volumes
	// Events records the tenant.* events in the admin's tenant.
	Events events.Appender
	Log    *slog.Logger
}

// Service is the tenants' door. It is safe for concurrent use.
type Service struct {
	cfg   Config
	st    store.Store
	log   *slog.Logger
	locks keylock.Map // one per tenant: suspend, resume, the start of a delete

	ctx    context.Context // ends at Close: the work the service owns
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	runs   map[string]bool // tenant id → a deletion of it runs; true: run it again after
}

// New checks cfg and builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Keys == nil || cfg.Sandboxes == nil || cfg.Events == nil {
		return nil, errors.New("tenants: Store, Keys, Sandboxes and Events must be set")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{cfg: cfg, st: cfg.Store, log: cfg.Log, ctx: ctx, cancel: cancel, runs: map[string]bool{}}, nil
}

// Close cancels the work the service owns and waits for it. A deletion
// it cut short stays deleting, and the next start runs it on.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// goOwned runs fn as work the service owns, on a context that ends at
// Close.
func (s *Service) goOwned(fn func(ctx context.Context)) {
	s.wg.Go(func() { fn(s.ctx) })
}

// Create makes the tenant name with its first key (auth.CreateTenant)
// and returns it with the key, whose secret is shown this once.
func (s *Service) Create(ctx context.Context, name string) (api.Tenant, error) {
	t, k, secret, err := auth.CreateTenant(ctx, s.st, name)
	if err != nil {
		return api.Tenant{}, err
	}
	key := auth.KeyToAPI(k)
	key.Secret = secret
	out := toAPI(t)
	out.Key = &key
	return out, nil
}

// Get shows a tenant: the caller's own, or any to an admin (the store
// answers 404 tenant_not_found for another's), a deleted one included.
func (s *Service) Get(ctx context.Context, id string) (api.Tenant, error) {
	t, err := s.st.GetTenant(ctx, id)
	if err != nil {
		return api.Tenant{}, err
	}
	return toAPI(t), nil
}

// toAPI is t as the API shows it.
func toAPI(t store.Tenant) api.Tenant {
	return api.Tenant{ID: t.ID, Name: t.Name, State: t.State, CreatedAt: t.CreatedAt, Deletion: t.Deletion}
}

// target reads the tenant the caller would suspend, resume or delete: an
// admin's key or the system may (403 admin_required), and never on the
// caller's own tenant or the admin tenant (403 tenant_protected).
func (s *Service) target(ctx context.Context, id, verb string) (store.Tenant, error) {
	p, ok := tenancy.From(ctx)
	if ok && !p.Holds(api.RoleAdmin) {
		return store.Tenant{}, tenancy.RoleRequired(api.RoleAdmin)
	}
	t, err := s.st.GetTenant(ctx, id)
	if err != nil {
		return store.Tenant{}, err
	}
	if ok && p.TenantID == id {
		return store.Tenant{}, errdefs.Forbidden("tenant_protected", "a tenant cannot %s itself: use another admin tenant's key", verb)
	}
	if t.Name == auth.AdminTenant {
		return store.Tenant{}, errdefs.Forbidden("tenant_protected", "the admin tenant cannot be %s", pastOf(verb))
	}
	keys, err := s.st.ListKeys(asTenant(ctx, id))
	if err != nil {
		return store.Tenant{}, err
	}
	if slices.ContainsFunc(keys, func(k store.Key) bool { return k.Role == api.RoleAdmin }) {
		return store.Tenant{}, errdefs.Forbidden("tenant_protected", "tenant %s holds admin keys: an admin tenant cannot be %s", id, pastOf(verb))
	}
	return t, nil
}

func pastOf(verb string) string {
	if verb == "delete" {
		return "deleted"
	}
	return verb + "ed"
}

// asTenant is ctx acting for tenantID, as a member: the control plane's
// own work on a tenant's resources goes through their doors as the
// tenant, never across tenants.
func asTenant(ctx context.Context, tenantID string) context.Context {
	return tenancy.With(ctx, tenancy.Principal{TenantID: tenantID, Role: api.RoleMember})
}

// record appends a tenant.* event to the log of the admin's tenant
// adminTenant ("" for the system: nothing is recorded).
func (s *Service) record(adminTenant, typ, msg string, t store.Tenant, data map[string]any) {
	if adminTenant == "" {
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["tenant_id"], data["name"] = t.ID, t.Name
	events.Record(s.cfg.Events, s.log, &events.Event{TenantID: adminTenant, Type: typ, Message: msg, Data: data})
}

// transition changes tenant id's state (store.TransitionTenant) and tells
// the keys, which keep its state in memory, that it may have changed.
func (s *Service) transition(ctx context.Context, id string, from []api.TenantState, to api.TenantState, fn func(*store.Tenant)) (store.Tenant, error) {
	t, err := store.TransitionTenant(ctx, s.st, id, from, to, fn)
	s.cfg.Keys.TenantChanged(id)
	return t, err
}
