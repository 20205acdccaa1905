package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// system is the control plane's context.
func system() context.Context { return tenancy.System(context.Background()) }

// admin acts as an admin key of tenantID.
func admin(tenantID string) context.Context {
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: tenantID, KeyID: "k-" + tenantID, Role: api.RoleAdmin})
}

// must fails t on err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// fill writes every kind of record through s's API: an active tenant
// with quotas and all it can hold, a suspended and a deleted one with
// what they held before, and the server's settings.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	sys := system()
	two, cpu := 2, 1.5
	first := map[string]string{}
	tenant := func(name string) string {
		tn := store.Tenant{ID: ids.New(), Name: name}
		k := key(tn.ID, "first", api.RoleAdmin)
		must(t, "CreateTenant", s.CreateTenant(sys, tn, k))
		first[tn.ID] = k.ID
		return tn.ID
	}
	a, sus, del := tenant("acme"), tenant("paused-co"), tenant("gone-co")
	_, err := s.SetTenantQuotas(sys, a, api.Quotas{Sandboxes: &two, CPU: &cpu})
	must(t, "SetTenantQuotas", err)
	ctx := admin(a)

	// Keys: one made by another, one used.
	k2 := key(a, "ci", api.RoleMember)
	must(t, "CreateKey", s.CreateKey(tenancy.With(context.Background(), tenancy.Principal{TenantID: a, KeyID: first[a], Role: api.RoleAdmin}), k2))
	must(t, "TouchKey", s.TouchKey(ctx, k2.ID, time.Date(2026, 1, 2, 3, 4, 5, 678912345, time.UTC)))

	// Sandboxes in several states, with everything a record holds.
	exp := time.Now().Add(time.Hour)
	must(t, "CreateVolume", s.CreateVolume(ctx, &store.Volume{Name: "cache", SizeMB: 64, SizeEnforced: true}))
	full := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "namespace",
		Env: map[string]string{"A": "1", "B": "two"}, Cwd: "/work", Limits: api.Limits{MemoryMB: 256, CPU: 0.5, Pids: 64},
		TimeoutS: 300, Labels: map[string]string{"team": "x", "env": "dev"}, Root: true,
		Network: api.NetworkPolicy{Egress: "allowlist", Allow: []string{"*.example.com", "10.0.0.0/8:443"}},
		Volumes: []api.VolumeMount{{Name: "cache", Path: "/cache"}}, OnExpiry: "stop",
		Handle: []byte{0, 1, 2, 255}, Node: "box1", ExpiresAt: &exp, IdleTimeoutS: 60, KeepaliveUntil: &exp}
	must(t, "CreateSandbox", s.CreateSandbox(ctx, full))
	_, err = s.UpdateSandbox(ctx, full.ID, func(sb *store.Sandbox) error { sb.Error = "once"; return nil })
	must(t, "UpdateSandbox", err)
	must(t, "SetSandboxDisk", s.SetSandboxDisk(sys, full.ID, 4096))
	paused := &store.Sandbox{ID: ids.New(), State: api.StatePaused, Template: "host", Driver: "process", Node: "box1",
		Limits: api.Limits{MemoryMB: 128, CPU: 1}}
	must(t, "CreateSandbox", s.CreateSandbox(ctx, paused))
	_, err = s.UpdateSandbox(ctx, paused.ID, func(sb *store.Sandbox) error { now := time.Now(); sb.PausedAt = &now; return nil })
	must(t, "UpdateSandbox", err)
	stopped := &store.Sandbox{ID: ids.New(), State: api.StateStopped, Template: "host", Driver: "process", Error: "exit 1"}
	must(t, "CreateSandbox", s.CreateSandbox(ctx, stopped))
	must(t, "SetPort", s.SetPort(ctx, &store.PortSetting{SandboxID: full.ID, Port: 8080, Public: true}))
	must(t, "SetPort", s.SetPort(ctx, &store.PortSetting{SandboxID: full.ID, Port: 3000}))

	// Secrets (stand-in sealed bytes: the store and the copy never open
	// them), templates, snapshots.
	for i, name := range []string{"OPENAI_API_KEY", "REGISTRY"} {
		sec := &store.Secret{Name: name, Description: "for " + name, ValueBytes: 5 + i, KeyID: "key-one",
			Nonce: []byte("twelve bytes"), Ciphertext: []byte{byte(i), 0, 0xff, 'x'}}
		if name == "REGISTRY" {
			sec.Kind, sec.Registry = "registry", "registry.example.com"
		}
		must(t, "CreateSecret", s.CreateSecret(ctx, sec))
	}
	must(t, "CreateTemplate", s.CreateTemplate(ctx, &store.Template{Name: "debian", Source: "127.0.0.1:5000/debian:bookworm",
		Digest: "sha256:" + strings.Repeat("d", 64), Config: api.ImageConfig{Env: []string{"PATH=/usr/bin"}, WorkingDir: "/srv", User: "app"},
		Layers: []string{"sha256:" + strings.Repeat("1", 64), "sha256:" + strings.Repeat("2", 64)}, Bytes: 1234, Flat: "flat-1"}))
	must(t, "CreateSnapshot", s.CreateSnapshot(ctx, &store.Snapshot{SandboxID: full.ID, Name: "before", Template: "host",
		Driver: "namespace", Bytes: 100, Files: 3, PauseMS: 7}))

	// An app with config, tasks (more than one, so their order shows)
	// and task logs, and events of every kind.
	app := &store.App{Name: "shop", Preset: "static", Template: "host", Public: true, State: api.AppReady,
		Live: full.ID, Dev: stopped.ID, Limits: &api.Limits{MemoryMB: 512}}
	must(t, "CreateApp", s.CreateApp(ctx, app))
	must(t, "PutAppConfig", s.PutAppConfig(ctx, &store.AppConfig{AppID: app.ID, Key: "MODE", Value: "prod", Access: api.AccessRuntime}))
	must(t, "PutAppConfig", s.PutAppConfig(ctx, &store.AppConfig{AppID: app.ID, Key: "TOKEN", Sensitive: true, KeyID: "key-one",
		Nonce: []byte("nonce-nonce!"), Ciphertext: []byte{9, 8, 7}, Access: api.AccessBoth}))
	for i := range 3 {
		code := i
		task := &api.Task{AppID: app.ID, Status: api.TaskQueued, Command: []string{"make", fmt.Sprint(i)}, TimeoutS: 60}
		must(t, "CreateTask", s.CreateTask(ctx, task))
		_, err := s.UpdateTask(ctx, app.ID, task.ID, func(tk *api.Task) error {
			tk.Status, tk.ExitCode = api.TaskSucceeded, &code
			return nil
		})
		must(t, "UpdateTask", err)
		for j := range 2 {
			_, err := s.AppendTaskLog(ctx, task.ID, []byte(fmt.Sprintf("task %d line %d\n", i, j)))
			must(t, "AppendTaskLog", err)
		}
	}
	for _, e := range []*store.Event{
		{Type: "tenant.note", Message: "about the tenant"},
		{SandboxID: full.ID, Type: api.EventSandboxCreated, Message: "created", Data: map[string]any{"driver": "namespace", "n": 3.5}},
		{AppID: app.ID, Type: api.EventAppPromoted, Message: "promoted", Data: map[string]any{"nested": map[string]any{"a": []any{"x"}}}},
	} {
		must(t, "AppendEvent", s.AppendEvent(ctx, e))
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	must(t, "PutSettings", s.PutSettings(sys, map[string]json.RawMessage{"max_timeout_s": raw(`120`), "on_idle": raw(`"stop"`)}))

	// The suspended tenant holds a sandbox and an event from before;
	// the deleted one the record of its deletion and an event.
	must(t, "CreateSandbox", s.CreateSandbox(admin(sus), &store.Sandbox{ID: ids.New(), State: api.StateStopped, Template: "host", Driver: "process"}))
	must(t, "AppendEvent", s.AppendEvent(admin(sus), &store.Event{Type: "tenant.note", Message: "before"}))
	must(t, "AppendEvent", s.AppendEvent(admin(del), &store.Event{Type: "tenant.note", Message: "last words"}))
	_, err = store.TransitionTenant(sys, s, sus, []api.TenantState{api.TenantActive}, api.TenantSuspended, nil)
	must(t, "suspend", err)
	_, err = store.TransitionTenant(sys, s, del, []api.TenantState{api.TenantActive}, api.TenantDeleted, func(tn *store.Tenant) {
		done := time.Now()
		tn.Deletion = &api.TenantDeletion{StartedAt: time.Now(), By: "k-" + a, ByTenant: a, Step: api.DeleteStepDone, FinishedAt: &done}
	})
	must(t, "delete", err)
}

// key returns a key record of tenantID.
func key(tenantID, name, role string) store.Key {
	id := ids.Token(8)[:12]
	return store.Key{ID: id, TenantID: tenantID, Name: name, Role: role, Prefix: "hk_" + id, Hash: []byte("hash-of-" + id)}
}

// dump is everything s holds, read through its API, in an order both
// stores give.
type dump struct {
	Tenants   []store.Tenant
	Keys      map[string][]store.Key
	Sandboxes []*store.Sandbox
	Counts    []store.SandboxCount
	Ports     map[string][]store.PortSetting
	Events    []store.Event
	Secrets   map[string][]store.Secret
	Templates map[string][]store.Template
	Snapshots map[string][]store.Snapshot
	Volumes   map[string][]store.Volume
	Settings  map[string]string
	Apps      map[string][]store.App
	Config    map[string][]store.AppConfig
	Tasks     map[string][]api.Task
	TaskLogs  map[string][]store.LogChunk
	Usage     map[string]store.TenantUsage
	Nodes     map[string]store.NodeUsage
}

// read reads everything s holds.
func read(t *testing.T, s store.Store) dump {
	t.Helper()
	sys := system()
	d := dump{Keys: map[string][]store.Key{}, Ports: map[string][]store.PortSetting{}, Secrets: map[string][]store.Secret{},
		Templates: map[string][]store.Template{}, Snapshots: map[string][]store.Snapshot{}, Volumes: map[string][]store.Volume{},
		Settings: map[string]string{}, Apps: map[string][]store.App{}, Config: map[string][]store.AppConfig{},
		Tasks: map[string][]api.Task{}, TaskLogs: map[string][]store.LogChunk{}, Usage: map[string]store.TenantUsage{}, Nodes: map[string]store.NodeUsage{}}
	var err error
	d.Tenants, err = s.ListTenants(sys)
	must(t, "ListTenants", err)
	for _, tn := range d.Tenants {
		ctx := admin(tn.ID)
		d.Keys[tn.ID], err = s.ListKeys(ctx)
		must(t, "ListKeys", err)
		d.Secrets[tn.ID], err = s.ListSecrets(ctx)
		must(t, "ListSecrets", err)
		d.Templates[tn.ID], err = s.ListTemplates(ctx)
		must(t, "ListTemplates", err)
		d.Snapshots[tn.ID], err = s.ListSnapshots(ctx, store.SnapshotQuery{})
		must(t, "ListSnapshots", err)
		d.Volumes[tn.ID], err = s.ListVolumes(ctx)
		must(t, "ListVolumes", err)
		d.Apps[tn.ID], err = s.ListApps(ctx)
		must(t, "ListApps", err)
		for _, app := range d.Apps[tn.ID] {
			d.Config[app.ID], err = s.ListAppConfig(ctx, app.ID)
			must(t, "ListAppConfig", err)
			d.Tasks[app.ID], err = s.ListTasks(ctx, app.ID, 0)
			must(t, "ListTasks", err)
			for _, task := range d.Tasks[app.ID] {
				d.TaskLogs[task.ID], err = s.TaskLog(ctx, task.ID, 0, 0)
				must(t, "TaskLog", err)
			}
		}
		d.Usage[tn.ID], err = s.TenantUsage(sys, tn.ID)
		must(t, "TenantUsage", err)
	}
	d.Sandboxes, err = s.SandboxesSince(sys, 0)
	must(t, "SandboxesSince", err)
	for _, sb := range d.Sandboxes {
		d.Ports[sb.ID], err = s.ListPorts(admin(sb.TenantID), sb.ID)
		must(t, "ListPorts", err)
		d.Nodes[sb.Node], err = s.NodeUsage(sys, sb.Node)
		must(t, "NodeUsage", err)
	}
	d.Counts, err = s.CountSandboxes(sys)
	must(t, "CountSandboxes", err)
	sort.Slice(d.Counts, func(i, j int) bool {
		return fmt.Sprint(d.Counts[i]) < fmt.Sprint(d.Counts[j])
	})
	for after := ""; ; {
		page, next, err := s.ListEvents(sys, store.EventQuery{After: after, Limit: store.MaxLimit})
		must(t, "ListEvents", err)
		d.Events = append(d.Events, page...)
		if next == "" {
			break
		}
		after = next
	}
	settings, err := s.Settings(sys)
	must(t, "Settings", err)
	for k, v := range settings {
		d.Settings[k] = string(v)
	}
	return d
}
