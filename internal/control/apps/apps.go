// Package apps is the layer above sandboxes that app builders use: an app
// has a name (its host), a preset, config and secrets, tasks, file history,
// events, and two role pointers, live and dev, each naming a sandbox.
// Everything it does to a sandbox goes through the sandbox service, the
// one door; what runs inside (the supervisor of sandbox.yaml, the file
// history) is the agent's.
//
// The role pointers change only through UpdateApp, conditional on the
// generation read (promote.go), and the router reads them from this
// package's cache, which every change replaces before it returns: the next
// request after a promotion reaches the promoted sandbox.
//
// Lifecycle: New (no side effects), then Recover once the sandbox service
// has recovered (tasks a restart cut short end as failed), then Close at
// shutdown, which cancels the work it owns (creates, tasks) and waits for it.
package apps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/keylock"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/store"
)

// Labels on an app's sandboxes.
const (
	LabelApp  = "hutch.app"
	LabelRole = "hutch.app.role"
)

// MaxTasks is the most tasks one ListTasks returns.
const MaxTasks = store.MaxLimit

// Dir is the app directory in its sandboxes: where the preset's files go,
// sandbox.yaml is read and tasks run.
const Dir = "/workspace"

// Store is the part of the store the apps layer keeps: apps, and every
// sandbox's record, to find what a crash left of an app's at recovery.
type Store interface {
	store.Apps
	store.Sandboxes
}

// Config is what the service works with.
type Config struct {
	Store     Store
	Sandboxes *sandbox.Service
	Sealer    *secrets.Sealer
	Events    events.Appender
	Log       *slog.Logger
	// Domain is the apps domain: an app answers at <name>.<Domain>.
	Domain string
	// URL makes an app's address from its host (the server's scheme and
	// port); nil: "http://<host>/".
	URL func(host string) string
	// ReadyTimeout bounds how long a new sandbox's app takes to answer;
	// zero means two minutes.
	ReadyTimeout time.Duration
	// Quotas admits each new app against its tenant's quota of apps (its
	// sandboxes are admitted as every sandbox is); nil admits every one.
	Quotas *quota.Service
}

// Service is the apps layer. It is safe for concurrent use.
type Service struct {
	cfg   Config
	st    store.Sandboxes
	apps  store.Apps
	sbx   *sandbox.Service
	log   *slog.Logger
	locks keylock.Map // one per app: create, promote, rollback, undo, delete, patch
	// superviseLocks, one per sandbox, make reading a role's environment
	// and handing it to the supervisor one step.
	superviseLocks keylock.Map
	cache          routes // route.go

	ctx    context.Context // ends at Close: the work the service owns
	cancel context.CancelFunc
	wg     sync.WaitGroup
	tasks  sync.Map // app id → *running: its task in progress
	builds sync.Map // app id → context.CancelFunc of its create in progress
}

// New checks cfg and builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Sandboxes == nil || cfg.Sealer == nil || cfg.Events == nil || cfg.Domain == "" {
		return nil, errors.New("apps: Store, Sandboxes, Sealer, Events and Domain must be set")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.URL == nil {
		cfg.URL = func(host string) string { return "http://" + host + "/" }
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{cfg: cfg, st: cfg.Store, apps: cfg.Store, sbx: cfg.Sandboxes, log: cfg.Log, ctx: ctx, cancel: cancel}, nil
}

// Domain is the apps domain.
func (s *Service) Domain() string { return s.cfg.Domain }

// Close cancels the work the service owns and waits for it.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// Recover ends what a restart cut short: a task's command and an app's
// create ran in goroutines of the control plane that is gone. A create
// cut short leaves the app failed, its sandboxes destroyed.
func (s *Service) Recover(ctx context.Context) error {
	sys := tenancy.System(ctx)
	all, err := s.apps.ListApps(sys)
	if err != nil {
		return fmt.Errorf("apps: recover: %w", err)
	}
	for i := range all {
		a := &all[i]
		if a.State != api.AppCreating {
			continue
		}
		actx := asTenant(ctx, a.TenantID)
		s.destroy(actx, a.Live, a.Dev)
		if _, err := s.apps.UpdateApp(actx, a.ID, func(a *store.App) error {
			a.State, a.Error, a.Live, a.Dev = api.AppFailed, "the control plane restarted while the app was created; delete it and create it again", "", ""
			return nil
		}); err != nil {
			s.log.Error("apps: end a create cut short", "app", a.Name, "err", err)
		}
	}
	if err := s.reapOrphans(ctx); err != nil {
		return err
	}
	tasks, err := s.apps.ActiveTasks(sys)
	if err != nil {
		return fmt.Errorf("apps: recover tasks: %w", err)
	}
	for _, t := range tasks {
		now := store.Time(time.Now())
		if _, err := s.apps.UpdateTask(sys, t.AppID, t.ID, func(t *api.Task) error {
			t.Status, t.Error, t.EndedAt = api.TaskFailed, "the control plane restarted while the task ran", &now
			return nil
		}); err != nil {
			s.log.Error("apps: end a task cut short", "task", t.ID, "err", err)
		}
	}
	return nil
}

// asTenant is ctx acting for tenantID, as a member: the control plane's
// own work on an app (recovery, the router's requests) goes through the
// tenant-scoped doors as the app's tenant, never across tenants.
func asTenant(ctx context.Context, tenantID string) context.Context {
	return tenancy.With(ctx, tenancy.Principal{TenantID: tenantID, Role: api.RoleMember})
}

// reapOrphans destroys the sandboxes labelled as an app's that their app
// does not point at: what a crash left between making a sandbox (a
// create's, a promotion's candidate) and recording it. Nothing is in
// progress while Recover runs, so every such sandbox is an orphan. Labels
// are the caller's to set too, so only a label naming an app of the
// sandbox's own tenant counts.
func (s *Service) reapOrphans(ctx context.Context) error {
	sys := tenancy.System(ctx)
	all, err := s.apps.ListApps(sys)
	if err != nil {
		return fmt.Errorf("apps: reap orphans: %w", err)
	}
	held := map[string]bool{}
	tenantOf := map[string]string{} // app id → tenant
	for _, a := range all {
		held[a.Live], held[a.Dev], held[a.PreviousLive] = true, true, true
		tenantOf[a.ID] = a.TenantID
	}
	sbs, err := s.st.AllSandboxes(sys, api.StateCreating, api.StateRunning, api.StateStopped, api.StatePaused, api.StateFailed)
	if err != nil {
		return fmt.Errorf("apps: reap orphans: %w", err)
	}
	for _, sb := range sbs {
		app := sb.Labels[LabelApp]
		if app == "" || held[sb.ID] || tenantOf[app] != sb.TenantID {
			continue
		}
		s.log.Warn("apps: destroying an app sandbox no app points at", "sandbox.id", sb.ID, "app", sb.Labels[LabelApp])
		s.destroy(asTenant(ctx, sb.TenantID), sb.ID)
	}
	return nil
}

// go runs fn as work the service owns, with a context that ends at Close
// and carries the principal p.
func (s *Service) goOwned(p tenancy.Principal, fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(tenancy.With(s.ctx, p))
	}()
}

// get reads one of the caller's apps.
func (s *Service) get(ctx context.Context, id string) (*store.App, error) {
	return s.apps.GetApp(ctx, id)
}

// toAPI is a as the API shows it.
func (s *Service) toAPI(a *store.App) api.App {
	host := a.Name + "." + s.cfg.Domain
	u := s.cfg.URL(host)
	return api.App{
		ID: a.ID, Name: a.Name, Preset: a.Preset, Template: a.Template, State: a.State, Error: a.Error, Public: a.Public,
		URL: u, DevURL: u + "dev/", Live: a.Live, Dev: a.Dev, PreviousLive: a.PreviousLive,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// Get returns one of the caller's apps.
func (s *Service) Get(ctx context.Context, id string) (api.App, error) {
	a, err := s.get(ctx, id)
	if err != nil {
		return api.App{}, err
	}
	return s.toAPI(a), nil
}

// List returns the caller's apps by name.
func (s *Service) List(ctx context.Context) (api.AppList, error) {
	as, err := s.apps.ListApps(ctx)
	if err != nil {
		return api.AppList{}, err
	}
	out := api.AppList{Apps: make([]api.App, 0, len(as))}
	for i := range as {
		out.Apps = append(out.Apps, s.toAPI(&as[i]))
	}
	return out, nil
}

// Patch changes what an app's owner may change.
func (s *Service) Patch(ctx context.Context, id string, req api.PatchAppRequest) (api.App, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	a, err := s.update(ctx, id, func(a *store.App) error {
		if req.Public != nil {
			a.Public = *req.Public
		}
		return nil
	})
	if err != nil {
		return api.App{}, err
	}
	return s.toAPI(a), nil
}

// update changes an app and puts what it wrote in the router's cache
// before returning. Call with the app's lock held (route.go says why).
func (s *Service) update(ctx context.Context, id string, fn func(*store.App) error) (*store.App, error) {
	a, err := s.apps.UpdateApp(ctx, id, fn)
	if err != nil {
		return nil, err
	}
	s.cache.put(a)
	return a, nil
}

// emit records an event in the app's log.
func (s *Service) emit(a *store.App, typ, msg string, data map[string]any) {
	events.Record(s.cfg.Events, s.log, &events.Event{TenantID: a.TenantID, AppID: a.ID, Type: typ, Message: msg, Data: data})
}
