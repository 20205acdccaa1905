package apps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/apps/presets"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/store"
)

// Presets lists the server's presets.
func Presets() api.PresetList {
	out := api.PresetList{Presets: []api.Preset{}}
	for _, n := range presets.Names() {
		p, _ := presets.Get(n)
		out.Presets = append(out.Presets, api.Preset{Name: p.Name, Description: p.Description, Template: p.Template})
	}
	return out
}

// Create records an app and makes its sandboxes in the background: dev
// from the preset (its files written where none are, its setup run, a
// first checkpoint), then live as a fork of dev. The app answers at once
// in state creating; it is ready once both roles' web processes serve, or
// failed with the reason. A failed app keeps no sandbox.
func (s *Service) Create(ctx context.Context, req api.CreateAppRequest) (api.App, error) {
	p, ok := tenancy.From(ctx)
	if !ok {
		return api.App{}, errdefs.Forbidden("no_tenant", "an app needs a tenant")
	}
	if err := store.CheckAppName(req.Name); err != nil {
		return api.App{}, err
	}
	pre, ok := presets.Get(req.Preset)
	if !ok {
		return api.App{}, errdefs.Invalid("unknown_preset", "preset %q is not one of %s", req.Preset, strings.Join(presets.Names(), ", "))
	}
	tmpl := pre.Template
	if req.Template != "" {
		tmpl = req.Template
	}
	a := &store.App{Name: req.Name, Preset: pre.Name, Template: tmpl, Public: req.Public, State: api.AppCreating, Limits: req.Limits}
	claim, err := s.cfg.Quotas.Admit(ctx, p.TenantID, quota.Ask{Apps: 1}, nil)
	if err != nil {
		return api.App{}, err
	}
	defer claim.Cancel()
	if err := claim.Commit(ctx, nil, func() error { return s.apps.CreateApp(ctx, a) }); err != nil {
		return api.App{}, err
	}
	s.cache.put(a)
	s.emit(a, api.EventAppCreated, fmt.Sprintf("app %s created from preset %s", a.Name, a.Preset), map[string]any{"preset": a.Preset})
	s.goOwned(p, func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s.builds.Store(a.ID, cancel)
		defer s.builds.Delete(a.ID)
		s.build(ctx, a.ID, pre)
	})
	return s.toAPI(a), nil
}

// build makes a new app's sandboxes; on failure it destroys what it made
// and marks the app failed.
func (s *Service) build(ctx context.Context, id string, pre presets.Preset) {
	unlock := s.locks.Lock(id)
	defer unlock()
	err := s.buildSandboxes(ctx, id, pre)
	if err == nil {
		return
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("the create was cut short (the server stopped, or the app was deleted): %w", err)
	}
	s.log.Warn("apps: create failed", "app", id, "err", err)
	tctx, cancel := s.teardown(ctx)
	defer cancel()
	a, gerr := s.get(tctx, id)
	if gerr != nil {
		return // deleted meanwhile
	}
	s.destroy(tctx, a.Live, a.Dev)
	if a, gerr = s.update(tctx, id, func(a *store.App) error {
		a.State, a.Error, a.Live, a.Dev = api.AppFailed, err.Error(), "", ""
		return nil
	}); gerr == nil {
		s.emit(a, api.EventAppFailed, "app "+a.Name+" failed: "+a.Error, nil)
	}
}

func (s *Service) buildSandboxes(ctx context.Context, id string, pre presets.Preset) error {
	a, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	dev, err := s.sbx.Create(ctx, s.sandboxRequest(a, api.RoleDev))
	if err != nil {
		return fmt.Errorf("create the dev sandbox: %w", err)
	}
	if a, err = s.update(ctx, id, func(a *store.App) error { a.Dev = dev.ID; return nil }); err != nil {
		s.destroy(ctx, dev.ID)
		return err
	}
	if err := s.applyPreset(ctx, dev.ID, pre); err != nil {
		return err
	}
	if _, err := s.sbx.Checkpoint(ctx, dev.ID, Dir, "preset "+pre.Name, api.CheckpointInitial); err != nil {
		return fmt.Errorf("first checkpoint: %w", err)
	}
	if _, err := s.supervise(ctx, a, dev.ID, api.RoleDev); err != nil {
		return err
	}
	live, err := s.sbx.Fork(ctx, dev.ID, api.ForkRequest{Count: 1, Labels: map[string]string{LabelRole: api.RoleLive}})
	if err != nil {
		return fmt.Errorf("fork the live sandbox: %w", err)
	}
	liveID := live.Sandboxes[0].ID
	if a, err = s.update(ctx, id, func(a *store.App) error { a.Live = liveID; return nil }); err != nil {
		s.destroy(ctx, liveID)
		return err
	}
	if _, err := s.supervise(ctx, a, liveID, api.RoleLive); err != nil {
		return err
	}
	// The router sends a ready app's requests straight to each role's
	// port, where a web process still starting answers 502 port_closed.
	// Both have started by now, so one deadline bounds them together.
	deadline := time.Now().Add(s.cfg.ReadyTimeout)
	for _, r := range []struct{ id, role string }{{a.Dev, api.RoleDev}, {a.Live, api.RoleLive}} {
		if err := s.waitServing(ctx, a, r.id, r.role, deadline); err != nil {
			return err
		}
	}
	a, err = s.update(ctx, id, func(a *store.App) error { a.State, a.Error = api.AppReady, ""; return nil })
	if err != nil {
		return err
	}
	s.log.Info("apps: app ready", "app", a.Name, "dev", a.Dev, "live", a.Live)
	return nil
}

// sandboxRequest is the create request of a sandbox of app a in role: it
// lives as long as the server allows and then pauses, or stops on a
// driver that cannot pause, rather than end (the router resumes or starts
// it with the next request).
func (s *Service) sandboxRequest(a *store.App, role string) api.CreateSandboxRequest {
	onExpiry := api.OnExpiryStop
	if s.sbx.DefaultDriver().Capabilities().Pause {
		onExpiry = api.OnExpiryPause
	}
	return api.CreateSandboxRequest{
		Template: a.Template,
		Labels:   map[string]string{LabelApp: a.ID, LabelRole: role},
		Limits:   a.Limits,
		TimeoutS: s.sbx.Settings().MaxTimeoutS,
		OnExpiry: onExpiry,
		Cwd:      Dir,
	}
}

// applyPreset writes the preset's files where the app has none (a file
// the user has is never replaced) and runs its setup.
func (s *Service) applyPreset(ctx context.Context, id string, pre presets.Preset) error {
	err := fs.WalkDir(pre.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		dst := path.Join(Dir, p)
		if _, err := s.sbx.StatFile(ctx, id, dst); err == nil {
			return nil
		} else if !errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
		f, err := pre.Files.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = s.sbx.WriteFile(ctx, id, dst, "", true, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("write the preset's files: %w", err)
	}
	if len(pre.Setup) == 0 {
		return nil
	}
	timeout := time.Duration(max(pre.SetupTimeoutS, 60)) * time.Second
	res, err := s.sbx.Exec(ctx, id, api.ExecRequest{Cmd: pre.Setup, Cwd: Dir, TimeoutMS: int(timeout / time.Millisecond)})
	if err != nil {
		return fmt.Errorf("preset setup %q: %w", strings.Join(pre.Setup, " "), err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("preset setup %q exited %d: %s", strings.Join(pre.Setup, " "), res.ExitCode, tail(res.Stderr+res.Stdout, 2000))
	}
	return nil
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return strings.TrimSpace(s)
	}
	return "…" + strings.TrimSpace(s[len(s)-n:])
}

// teardown is a context for cleaning up that outlives ctx's cancellation
// (a create cut short by Close still destroys what it made) but not by
// long.
func (s *Service) teardown(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// destroy destroys sandboxes, logging what fails.
func (s *Service) destroy(ctx context.Context, ids ...string) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		s.cache.forgetPort(id)
		if err := s.sbx.Destroy(ctx, id); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			s.log.Error("apps: destroy sandbox", "sandbox.id", id, "err", err)
		}
	}
}

// Delete destroys an app's sandboxes and deletes it with its config, tasks
// and events; a running task, or its create still in progress, is
// cancelled first.
func (s *Service) Delete(ctx context.Context, id string) error {
	a, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	s.cancelTasks(a.ID)
	if cancel, ok := s.builds.Load(a.ID); ok {
		cancel.(context.CancelFunc)()
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	if a, err = s.get(ctx, id); err != nil {
		return err
	}
	tctx, cancel := s.teardown(ctx)
	defer cancel()
	s.destroy(tctx, a.Live, a.Dev, a.PreviousLive)
	if err := s.apps.DeleteApp(tctx, id); err != nil {
		return err
	}
	s.cache.drop(a)
	events.Record(s.cfg.Events, s.log, &events.Event{TenantID: a.TenantID, Type: api.EventAppDeleted, Message: "app " + a.Name + " deleted",
		Data: map[string]any{"app_id": a.ID, "name": a.Name}})
	return nil
}
