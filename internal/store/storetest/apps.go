package storetest

import (
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testApps covers store.Apps: names unique on the server, tenant
// isolation (another tenant's app, config and tasks behave as missing
// ones), the generation that grows only when the role pointers change,
// one task at a time per app under concurrent creates, the system-only
// reads, config upserts and the events of an app.
func testApps(t *testing.T, s store.Store) {
	tenantA, ctx := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	a := &store.App{Name: "shop", Preset: "static", State: api.AppCreating, Limits: &api.Limits{MemoryMB: 256}}
	if err := s.CreateApp(ctx, a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	if a.TenantID != tenantA.ID || a.ID == "" {
		t.Fatalf("created %+v", a)
	}
	wantErr(t, "a name another tenant took", s.CreateApp(ctxB, &store.App{Name: "shop", Preset: "static"}), errdefs.ErrConflict, "app_exists")
	wantErr(t, "a bad name", s.CreateApp(ctx, &store.App{Name: "8080-x", Preset: "static"}), errdefs.ErrInvalid, "invalid_app_name")
	got, err := s.GetApp(ctx, a.ID)
	if err != nil || got.Name != "shop" || got.Limits == nil || got.Limits.MemoryMB != 256 || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("GetApp = %+v, %v", got, err)
	}
	if _, err := s.GetApp(ctxB, a.ID); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's GetApp: %v", err)
	}
	if _, err := s.AppByName(ctx, "shop"); !errdefs.HasCode(err, "system_only") {
		t.Errorf("AppByName as a tenant: %v", err)
	}
	if byName, err := s.AppByName(system(), "shop"); err != nil || byName.ID != a.ID {
		t.Errorf("AppByName as the system = %+v, %v", byName, err)
	}
	if list, err := s.ListApps(ctxB); err != nil || len(list) != 0 {
		t.Errorf("another tenant lists %v, %v", list, err)
	}

	// The generation grows with the pointers, not with other changes.
	up, err := s.UpdateApp(ctx, a.ID, func(a *store.App) error { a.State = api.AppReady; return nil })
	if err != nil || up.Generation != 0 || up.State != api.AppReady {
		t.Fatalf("UpdateApp state = %+v, %v", up, err)
	}
	up, err = s.UpdateApp(ctx, a.ID, func(a *store.App) error { a.Live, a.Dev, a.Name, a.Generation = "l1", "d1", "renamed", 99; return nil })
	if err != nil || up.Generation != 1 || up.Name != "shop" || up.Live != "l1" {
		t.Fatalf("UpdateApp pointers = %+v, %v", up, err)
	}
	if _, err := s.UpdateApp(ctxB, a.ID, func(*store.App) error { return nil }); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's UpdateApp: %v", err)
	}

	// Config: upsert keeps CreatedAt, another tenant sees nothing.
	c := &store.AppConfig{AppID: a.ID, Key: "TOKEN", Value: "v1", Access: api.AccessRuntime}
	if err := s.PutAppConfig(ctx, c); err != nil {
		t.Fatalf("PutAppConfig: %v", err)
	}
	created := c.CreatedAt
	c2 := &store.AppConfig{AppID: a.ID, Key: "TOKEN", Sensitive: true, KeyID: "k", Nonce: []byte{1}, Ciphertext: []byte{2}, Access: api.AccessBoth}
	if err := s.PutAppConfig(ctx, c2); err != nil {
		t.Fatalf("PutAppConfig again: %v", err)
	}
	cfg, err := s.ListAppConfig(ctx, a.ID)
	if err != nil || len(cfg) != 1 || cfg[0].Value != "" || !cfg[0].Sensitive || !cfg[0].CreatedAt.Equal(created) || cfg[0].Access != api.AccessBoth {
		t.Errorf("ListAppConfig = %+v, %v", cfg, err)
	}
	wantErr(t, "a bad key", s.PutAppConfig(ctx, &store.AppConfig{AppID: a.ID, Key: "1X"}), errdefs.ErrInvalid, "invalid_config_key")
	if err := s.PutAppConfig(ctxB, &store.AppConfig{AppID: a.ID, Key: "X"}); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's PutAppConfig: %v", err)
	}
	if _, err := s.ListAppConfig(ctxB, a.ID); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's ListAppConfig: %v", err)
	}
	wantErr(t, "delete a missing key", s.DeleteAppConfig(ctx, a.ID, "NOPE"), errdefs.ErrNotFound, "config_not_found")

	// Tasks: of many concurrent creates, one wins; the rest are refused.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, refused := 0, 0
	for range 8 {
		wg.Go(func() {
			err := s.CreateTask(ctx, &api.Task{AppID: a.ID, Status: api.TaskQueued, Command: []string{"true"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errdefs.HasCode(err, "task_running"):
				refused++
			default:
				t.Errorf("CreateTask: %v", err)
			}
		})
	}
	wg.Wait()
	if won != 1 || refused != 7 {
		t.Fatalf("concurrent tasks: %d created, %d refused; want 1 and 7", won, refused)
	}
	active, err := s.ActiveTasks(system())
	if err != nil || len(active) != 1 {
		t.Fatalf("ActiveTasks = %v, %v", active, err)
	}
	if _, err := s.ActiveTasks(ctx); !errdefs.HasCode(err, "system_only") {
		t.Errorf("ActiveTasks as a tenant: %v", err)
	}
	task := active[0]
	if _, err := s.GetTask(ctxB, a.ID, task.ID); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's GetTask: %v", err)
	}
	done, err := s.UpdateTask(ctx, a.ID, task.ID, func(t *api.Task) error { t.Status = api.TaskSucceeded; return nil })
	if err != nil || done.Status != api.TaskSucceeded {
		t.Fatalf("UpdateTask = %+v, %v", done, err)
	}
	if err := s.CreateTask(ctx, &api.Task{AppID: a.ID, Status: api.TaskQueued, Command: []string{"true"}}); err != nil {
		t.Errorf("a task after the last ended: %v", err)
	}
	for _, chunk := range []string{"one", "two", "three"} {
		if _, err := s.AppendTaskLog(ctx, task.ID, []byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	log, err := s.TaskLog(ctx, task.ID, 1, 10)
	if err != nil || len(log) != 2 || log[0].Seq != 2 || string(log[1].Data) != "three" {
		t.Errorf("TaskLog after 1 = %+v, %v", log, err)
	}
	if list, err := s.ListTasks(ctx, a.ID, 10); err != nil || len(list) != 2 || list[1].ID != task.ID {
		t.Errorf("ListTasks (newest first) = %+v, %v", list, err)
	}

	// Events of the app: its own log, none of another tenant's.
	if err := s.AppendEvent(ctx, &store.Event{AppID: a.ID, Type: api.EventAppPromoted, Message: "m"}); err != nil {
		t.Fatalf("AppendEvent: %v", err)
	}
	if err := s.AppendEvent(ctxB, &store.Event{AppID: a.ID, Type: api.EventAppPromoted, Message: "m"}); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("an event of another tenant's app: %v", err)
	}
	evs, _, err := s.ListEvents(ctx, store.EventQuery{AppID: a.ID})
	if err != nil || len(evs) != 1 || evs[0].AppID != a.ID {
		t.Errorf("ListEvents of the app = %+v, %v", evs, err)
	}

	// Delete takes the config, tasks and events with the app.
	if err := s.DeleteApp(ctxB, a.ID); !errdefs.HasCode(err, "app_not_found") {
		t.Errorf("another tenant's DeleteApp: %v", err)
	}
	if err := s.DeleteApp(ctx, a.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	if evs, _, _ := s.ListEvents(ctx, store.EventQuery{AppID: a.ID}); len(evs) != 0 {
		t.Errorf("the deleted app's events remain: %v", evs)
	}
	if active, _ := s.ActiveTasks(system()); len(active) != 0 {
		t.Errorf("the deleted app's tasks remain: %v", active)
	}
}
