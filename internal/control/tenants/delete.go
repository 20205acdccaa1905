package tenants

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Delete deletes a tenant with everything it owns, and keeps its record.
// The tenant is marked deleting first, with who asked and when, so that
// nothing new reaches it and a restart goes on with it; then, in the
// background on work the service owns (a client that hangs up stops
// nothing), its keys are revoked and their requests ended, and its apps,
// sandboxes, snapshots, templates (with the layers no other template
// names), volumes, secrets and events are removed, step by step
// (api.DeleteStep*), each step counted in the record. A step that fails
// leaves the tenant deleting with the reason in its record; Delete again,
// or the next start, runs the deletion on from there (every step redone
// finds what is left). Once done the tenant is deleted: its row, with the
// record, is all that is left, and the admin's tenant's log holds a
// tenant.deleted event.
//
// It returns the tenant: deleting while the deletion runs, deleted once
// it is done, which every later Delete returns as it is.
func (s *Service) Delete(ctx context.Context, id string) (api.Tenant, error) {
	t, err := s.target(ctx, id, "delete")
	if err != nil {
		return api.Tenant{}, err
	}
	if t.State == api.TenantDeleted {
		return toAPI(t), nil
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	p, _ := tenancy.From(ctx)
	t, err = s.transition(ctx, id, []api.TenantState{api.TenantActive, api.TenantSuspended, api.TenantDeleting}, api.TenantDeleting,
		func(t *store.Tenant) {
			if t.Deletion == nil {
				t.Deletion = &api.TenantDeletion{StartedAt: time.Now(), By: p.KeyID, ByTenant: p.TenantID, Step: api.DeleteStepKeys}
			}
			t.Deletion.Error = ""
		})
	if t.State == api.TenantDeleted {
		return toAPI(t), nil
	}
	if err != nil {
		return api.Tenant{}, err
	}
	s.log.InfoContext(ctx, "tenant deletion", logattr.Tenant(id), logattr.Key(p.KeyID), "step", t.Deletion.Step)
	s.start(id)
	return toAPI(t), nil
}

// start runs the deletion of tenant id on work the service owns, unless
// one runs already; then that one runs it once more when it ends, so a
// Delete that came while it failed is not lost.
func (s *Service) start(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[id]; ok {
		s.runs[id] = true
		return
	}
	s.runs[id] = false
	s.goOwned(func(ctx context.Context) {
		for {
			if err := s.run(ctx, id); err != nil {
				s.log.Error("tenant deletion stopped short", logattr.Tenant(id), "err", err)
			}
			s.mu.Lock()
			if !s.runs[id] || ctx.Err() != nil {
				delete(s.runs, id)
				s.mu.Unlock()
				return
			}
			s.runs[id] = false
			s.mu.Unlock()
		}
	})
}

// A step of a deletion: fn removes one kind of what the tenant owns and
// counts it in the record.
type step struct {
	name string
	fn   func(d *deletion) error
}

// steps are a deletion's steps, in order: the keys first, so nothing new
// starts; apps before the sandboxes they hold; snapshots before the
// templates they name; volumes once no sandbox mounts them; the events
// last, after those the steps before recorded.
func (s *Service) steps() []step {
	return []step{
		{api.DeleteStepKeys, s.revokeKeys},
		{api.DeleteStepApps, s.deleteApps},
		{api.DeleteStepSandboxes, s.destroySandboxes},
		{api.DeleteStepSnapshots, s.deleteSnapshots},
		{api.DeleteStepTemplates, s.deleteTemplates},
		{api.DeleteStepVolumes, s.deleteVolumes},
		{api.DeleteStepSecrets, s.deleteSecrets},
		{api.DeleteStepEvents, s.deleteEvents},
	}
}

// run runs the deletion of tenant id, if it is deleting, from its first
// step to the last; each finds only what is left. A failure is recorded
// in the tenant's record, unless ctx ended (the server stops; the next
// start goes on).
func (s *Service) run(ctx context.Context, id string) (retErr error) {
	d := &deletion{s: s, id: id, sys: tenancy.System(ctx), as: asTenant(ctx, id)}
	t, err := s.st.GetTenant(d.sys, id)
	if err != nil || t.State != api.TenantDeleting {
		return err
	}
	defer func() {
		if retErr != nil && ctx.Err() == nil {
			d.fail(retErr)
		}
	}()
	if err := d.update(func(r *api.TenantDeletion) { r.Error = "" }); err != nil {
		return err
	}
	for _, st := range s.steps() {
		if err := d.update(func(r *api.TenantDeletion) { r.Step = st.name }); err != nil {
			return err
		}
		if err := st.fn(d); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	t, err = s.transition(d.sys, id, []api.TenantState{api.TenantDeleting}, api.TenantDeleted, func(t *store.Tenant) {
		now := time.Now()
		t.Deletion.Step, t.Deletion.FinishedAt = api.DeleteStepDone, &now
	})
	if err != nil {
		return err
	}
	r := t.Deletion
	s.log.Info("tenant deleted", logattr.Tenant(id), logattr.Key(r.By), "removed", fmt.Sprintf("%+v", r.Removed))
	s.record(r.ByTenant, api.EventTenantDeleted, fmt.Sprintf("tenant %q deleted", t.Name), t, map[string]any{"removed": r.Removed})
	return nil
}

// deletion is one run of a tenant's deletion: the tenant, the contexts
// it acts in, and its record, written as it goes.
type deletion struct {
	s   *Service
	id  string
	sys context.Context // the system's: the store's Delete*ByTenant, the record
	as  context.Context // the tenant's: the doors of what it owns
}

// update changes the record, while the tenant is deleting.
func (d *deletion) update(fn func(*api.TenantDeletion)) error {
	_, err := store.TransitionTenant(d.sys, d.s.st, d.id, []api.TenantState{api.TenantDeleting}, api.TenantDeleting, func(t *store.Tenant) {
		if t.Deletion == nil { // a deleting tenant has one; a store edited by hand may not
			t.Deletion = &api.TenantDeletion{StartedAt: time.Now()}
		}
		fn(t.Deletion)
	})
	return err
}

// count adds n of what fn names to the record.
func (d *deletion) count(n int, fn func(*api.TenantRemoved) *int) error {
	if n == 0 {
		return nil
	}
	return d.update(func(r *api.TenantDeletion) { *fn(&r.Removed) += n })
}

// fail records why the run stopped short: the error's message a person
// may read (the log has the rest).
func (d *deletion) fail(err error) {
	_, _, msg := errdefs.Classify(err)
	if uerr := d.update(func(r *api.TenantDeletion) { r.Error = r.Step + ": " + msg }); uerr != nil {
		d.s.log.Error("record a tenant deletion's failure", logattr.Tenant(d.id), "err", uerr)
	}
}

// gone reports whether err says a thing is gone already: another
// deletion of it, or its own, got there first.
func gone(err error) bool { return errors.Is(err, errdefs.ErrNotFound) }

// revokeKeys counts the tenant's keys into the record before they go,
// once: counted after, a deletion cut short between the two (the server
// killed) found none left to count when it ran on. No key is made
// meanwhile: the tenant is deleting.
func (s *Service) revokeKeys(d *deletion) error {
	t, err := s.st.GetTenant(d.sys, d.id)
	if err != nil {
		return err
	}
	if t.Deletion == nil || t.Deletion.Removed.Keys == 0 {
		keys, err := s.st.ListKeys(d.as)
		if err != nil {
			return err
		}
		if err := d.count(len(keys), func(r *api.TenantRemoved) *int { return &r.Keys }); err != nil {
			return err
		}
	}
	_, err = s.cfg.Keys.RevokeTenant(d.sys, d.id)
	return err
}

func (s *Service) deleteApps(d *deletion) error {
	apps := func(r *api.TenantRemoved) *int { return &r.Apps }
	if s.cfg.Apps != nil {
		list, err := s.cfg.Apps.List(d.as)
		if err != nil {
			return err
		}
		for _, a := range list.Apps {
			if err := s.cfg.Apps.Delete(d.as, a.ID); err != nil && !gone(err) {
				return fmt.Errorf("app %s: %w", a.Name, err)
			}
			if err := d.count(1, apps); err != nil {
				return err
			}
		}
	}
	n, err := s.st.DeleteAppsByTenant(d.sys, d.id)
	if err != nil {
		return err
	}
	return d.count(n, apps)
}

func (s *Service) destroySandboxes(d *deletion) error {
	sbs, err := s.sandboxes(d.as)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if sb.State == api.StateDestroyed {
			continue
		}
		if err := s.cfg.Sandboxes.Destroy(d.as, sb.ID); err != nil && !gone(err) {
			return err
		}
	}
	n, err := s.st.DeleteSandboxesByTenant(d.sys, d.id)
	if cerr := d.count(n, func(r *api.TenantRemoved) *int { return &r.Sandboxes }); err == nil {
		err = cerr
	}
	return err
}

func (s *Service) deleteSnapshots(d *deletion) error {
	snaps, err := s.cfg.Sandboxes.ListSnapshots(d.as, "")
	if err != nil {
		return err
	}
	for _, snap := range snaps {
		if err := s.cfg.Sandboxes.DeleteSnapshot(d.as, snap.ID); err != nil && !gone(err) {
			return fmt.Errorf("snapshot %s: %w", snap.ID, err)
		}
		if err := d.count(1, func(r *api.TenantRemoved) *int { return &r.Snapshots }); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) deleteTemplates(d *deletion) error {
	templates := func(r *api.TenantRemoved) *int { return &r.Templates }
	if s.cfg.Templates != nil {
		list, err := s.cfg.Templates.List(d.as)
		if err != nil {
			return err
		}
		for _, t := range list.Templates {
			if err := s.cfg.Templates.Delete(d.as, t.Name); err != nil && !gone(err) {
				return fmt.Errorf("template %s: %w", t.Name, err)
			}
			if err := d.count(1, templates); err != nil {
				return err
			}
		}
	}
	n, err := s.st.DeleteTemplatesByTenant(d.sys, d.id)
	if err != nil {
		return err
	}
	return d.count(n, templates)
}

func (s *Service) deleteVolumes(d *deletion) error {
	volumes := func(r *api.TenantRemoved) *int { return &r.Volumes }
	if s.cfg.Volumes != nil {
		list, err := s.cfg.Volumes.List(d.as)
		if err != nil {
			return err
		}
		for _, v := range list.Volumes {
			if err := s.cfg.Volumes.Delete(d.as, v.Name); err != nil && !gone(err) {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := d.count(1, volumes); err != nil {
				return err
			}
		}
	}
	n, err := s.st.DeleteVolumesByTenant(d.sys, d.id)
	if err != nil {
		return err
	}
	return d.count(n, volumes)
}

func (s *Service) deleteSecrets(d *deletion) error {
	n, err := s.st.DeleteSecretsByTenant(d.sys, d.id)
	if cerr := d.count(n, func(r *api.TenantRemoved) *int { return &r.Secrets }); err == nil {
		err = cerr
	}
	return err
}

func (s *Service) deleteEvents(d *deletion) error {
	n, err := s.st.DeleteEventsByTenant(d.sys, d.id)
	if cerr := d.count(n, func(r *api.TenantRemoved) *int { return &r.Events }); err == nil {
		err = cerr
	}
	return err
}
