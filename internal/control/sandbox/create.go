package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Create validates req, admits it against its tenant's quotas and this
// node's capacity (admission.go), records the sandbox as creating, has its
// driver build it, and records it as running. When any step fails the driver's
// work is torn down on a context that outlives the request, the record is
// marked failed with the reason, and the error is returned. The sandbox's
// lock is held from before its record exists, so a destroy that finds the
// record mid-create waits for the create to end.
func (s *Service) Create(ctx context.Context, req api.CreateSandboxRequest) (api.Sandbox, error) {
	return s.create(ctx, req, false)
}

// create is Create; takeSnapshot lets the driver take the files of
// req.Snapshot as the new sandbox's instead of copying them (Fork's last
// sandbox: the snapshot is dropped right after).
func (s *Service) create(ctx context.Context, req api.CreateSandboxRequest, takeSnapshot bool) (_ api.Sandbox, retErr error) {
	p, ok := tenancy.From(ctx)
	if !ok {
		return api.Sandbox{}, errdefs.Forbidden("no_tenant", "no tenant in request")
	}
	if err := s.refuseDraining(); err != nil {
		return api.Sandbox{}, err
	}
	var (
		snapDir   string
		snapBytes int64 // its files at the start, a copy of the snapshot's
	)
	if req.Snapshot != "" {
		snap, err := s.store.GetSnapshot(ctx, req.Snapshot)
		if err != nil {
			return api.Sandbox{}, err
		}
		if (req.Template != "" && req.Template != snap.Template) || (req.Driver != "" && req.Driver != snap.Driver) {
			return api.Sandbox{}, errdefs.Invalid("snapshot_mismatch", "snapshot %s is of a %s sandbox from template %q; leave template and driver out, or name those",
				snap.ID, snap.Driver, snap.Template)
		}
		req.Template, req.Driver, snapDir, snapBytes = snap.Template, snap.Driver, s.snapshotDir(snap.ID), snap.Bytes
	}
	d, err := s.drivers.pick(req.Driver)
	if err != nil {
		return api.Sandbox{}, err
	}
	defer func(start time.Time) { s.observe.create(d.Name(), start, retErr) }(time.Now())
	if snapDir != "" {
		if _, _, err := s.drivers.snapshotter(&store.Sandbox{Driver: d.Name()}); err != nil {
			return api.Sandbox{}, err
		}
	}
	if err := s.cfg.Disk.Check("a new sandbox"); err != nil {
		return api.Sandbox{}, err
	}
	set, err := s.complete(d, req)
	if err != nil {
		return api.Sandbox{}, err
	}
	if set.image {
		// A template that does not exist is refused before any record.
		if _, err := s.resolveImage(ctx, set.template); err != nil {
			return api.Sandbox{}, err
		}
	}
	if _, err := s.resolveVolumes(ctx, d, req.Volumes); err != nil {
		return api.Sandbox{}, err
	}
	now := time.Now().UTC()
	rec := &store.Sandbox{
		ID:       ids.New(),
		TenantID: p.TenantID,
		State:    api.StateCreating,
		Template: set.template,
		Driver:   d.Name(),
		Env:      set.env,
		Cwd:      set.cwd,
		Limits:   set.limits,
		TimeoutS: int(set.timeout / time.Second),
		Labels:   set.labels,
		Root:     set.root,
		Network:  set.network,
		Volumes:  req.Volumes,
		OnExpiry: set.onExpiry,
		Node:     s.cfg.Node,

		IdleTimeoutS: req.IdleTimeoutS,
		DiskBytes:    snapBytes,
	}
	if set.timeout > 0 {
		exp := now.Add(set.timeout)
		rec.ExpiresAt = &exp
	}
	if rec.Env, err = s.seals.env(rec, set.env); err != nil {
		return api.Sandbox{}, err
	}
	unlock := s.locks.Lock(rec.ID)
	defer unlock()
	// The record takes the room admit found (admission.go).
	claim, err := s.admission.admit(ctx, rec.TenantID, rec.Limits, true, snapBytes)
	if err != nil {
		return api.Sandbox{}, err
	}
	if err := claim.Commit(ctx, nil, func() error { return s.store.CreateSandbox(ctx, rec) }); err != nil {
		return api.Sandbox{}, err
	}
	spec := driver.Spec{
		SandboxID:    rec.ID,
		TenantID:     rec.TenantID,
		Template:     rec.Template,
		Env:          s.env(d, rec.ID, set.env),
		Cwd:          rec.Cwd,
		Limits:       rec.Limits,
		Token:        ids.Token(32),
		MaxFileBytes: s.cfg.MaxFileBytes,
		MaxTarBytes:  s.cfg.MaxTarBytes,
		Root:         rec.Root,
		Snapshot:     snapDir,
		TakeSnapshot: snapDir != "" && takeSnapshot,
	}
	// Again, now that the record holds the template and the volumes: a
	// delete that came first is seen here, one that comes later is
	// refused.
	if set.image {
		if spec.Image, err = s.resolveImage(ctx, rec.Template); err != nil {
			s.fail(ctx, rec.ID, err)
			return api.Sandbox{}, err
		}
	}
	if spec.Volumes, err = s.resolveVolumes(ctx, d, rec.Volumes); err != nil {
		s.fail(ctx, rec.ID, err)
		return api.Sandbox{}, err
	}
	h, err := d.Create(ctx, spec)
	if err != nil {
		s.fail(ctx, rec.ID, err)
		return api.Sandbox{}, err
	}
	defer func() {
		if retErr != nil {
			tctx, cancel := s.teardownContext(ctx)
			defer cancel()
			if err := d.Destroy(tctx, h); err != nil {
				s.log.Error("roll back sandbox", logattr.Sandbox(rec.ID), "err", err)
			}
			s.fail(tctx, rec.ID, retErr)
		}
	}()
	raw, err := s.seals.encodeHandle(rec, h)
	if err != nil {
		return api.Sandbox{}, err
	}
	running, err := s.transition(ctx, rec.ID, OpCreate, api.StateRunning, func(sb *store.Sandbox) {
		sb.Handle = raw
	})
	if err != nil {
		return api.Sandbox{}, err // rec stays the rollback's: a failed transition returns none
	}
	rec = running
	s.attach(ctx, rec, d, h)
	s.log.Info("sandbox created", logattr.Sandbox(rec.ID), logattr.Tenant(rec.TenantID), "driver", d.Name())
	s.emitCreated(ctx, rec)
	return s.toAPI(rec), nil
}

// resolveImage resolves the caller's image template name; a missing one
// is the request's fault.
func (s *Service) resolveImage(ctx context.Context, name string) (*driver.Image, error) {
	img, err := s.cfg.Templates.Resolve(ctx, name)
	if errdefs.HasCode(err, "template_not_found") {
		return nil, errdefs.Invalid("invalid_template", "template %q does not exist; GET /v1/templates lists yours", name)
	}
	return img, err
}

// resolveVolumes resolves a create's volume mounts, where there are any.
func (s *Service) resolveVolumes(ctx context.Context, d driver.Driver, mounts []api.VolumeMount) ([]driver.Volume, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	if s.cfg.Volumes == nil || !d.Capabilities().Volumes {
		return nil, errdefs.New(errdefs.ErrUnsupported, "volumes_unsupported", "the %s driver on this server mounts no volumes", d.Name())
	}
	return s.cfg.Volumes.Resolve(ctx, mounts)
}
