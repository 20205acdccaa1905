package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Snapshots: a copy of a sandbox's own files (its root over its
// template), kept by its driver in <SnapshotDir>/<id> and recorded in the
// store, owned by the tenant, outliving the sandbox. A sandbox starts from
// one (Create with req.Snapshot), a running sandbox goes back to one
// (Restore), and Fork is a snapshot that starts n sandboxes and is then
// dropped.

// Snapshot copies the files of the caller's sandbox id, running or
// stopped, into a new snapshot.
func (s *Service) Snapshot(ctx context.Context, id string, req api.CreateSnapshotRequest) (api.Snapshot, error) {
	if len(req.Name) > store.MaxSnapshotName {
		return api.Snapshot{}, errdefs.Invalid("invalid_snapshot_name", "a snapshot's name must be at most %d bytes", store.MaxSnapshotName)
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Snapshot{}, err
	}
	snap, _, err := s.capture(ctx, rec, req.Name, true)
	if err != nil {
		return api.Snapshot{}, err
	}
	return snapshotToAPI(snap), nil
}

// capture snapshots rec (under its lock) and records the snapshot, once
// admitted against its tenant's quotas: its bytes, estimated as what the
// sandbox's files took when last measured, and then checked as copied;
// kept (a place among the tenant's snapshots) unless it is a fork's,
// which is dropped once the forks have their own files.
func (s *Service) capture(ctx context.Context, rec *store.Sandbox, name string, kept bool) (*store.Snapshot, driver.SnapshotStats, error) {
	var st driver.SnapshotStats
	if err := require(OpSnapshot, rec); err != nil {
		return nil, st, err
	}
	_, sn, err := s.drivers.snapshotter(rec)
	if err != nil {
		return nil, st, err
	}
	if err := s.cfg.Disk.Check("a snapshot"); err != nil {
		return nil, st, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return nil, st, err
	}
	ask := quota.Ask{SnapshotBytes: rec.DiskBytes}
	if kept {
		ask.Snapshots = 1
	}
	claim, err := s.cfg.Quotas.Admit(ctx, rec.TenantID, ask, nil)
	if err != nil {
		return nil, st, err
	}
	defer claim.Cancel()
	snap := &store.Snapshot{ID: ids.New(), TenantID: rec.TenantID, SandboxID: rec.ID, Name: name, Template: rec.Template, Driver: rec.Driver}
	dir := s.snapshotDir(snap.ID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, st, err
	}
	start := time.Now()
	// The files come before their record: a sweep meanwhile leaves them.
	s.mu.Lock()
	s.capturing[snap.ID] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.capturing, snap.ID)
		s.mu.Unlock()
	}()
	if st, err = sn.Snapshot(ctx, h, dir); err != nil {
		return nil, st, err
	}
	snap.Bytes, snap.Files, snap.PauseMS = st.Bytes, st.Files, st.Pause.Milliseconds()
	made := ask
	made.SnapshotBytes = st.Bytes
	if err := claim.Commit(ctx, &made, func() error { return s.store.CreateSnapshot(ctx, snap) }); err != nil {
		if rerr := sn.RemoveSnapshot(dir); rerr != nil {
			s.log.Error("remove an unrecorded snapshot", "dir", dir, "err", rerr)
		}
		return nil, st, err
	}
	s.log.Info("snapshot taken", logattr.Sandbox(rec.ID), "snapshot", snap.ID, "method", st.Method, "bytes", st.Bytes,
		"files", st.Files, "pause", st.Pause, "frozen", st.Frozen, "took", time.Since(start).Round(time.Microsecond))
	s.emit(ctx, rec, api.EventSnapshotCreated, "snapshot "+snap.ID+" taken", map[string]any{"snapshot": snap.ID, "pause_ms": snap.PauseMS})
	return snap, st, nil
}

// GetSnapshot returns one of the caller's snapshots.
func (s *Service) GetSnapshot(ctx context.Context, id string) (api.Snapshot, error) {
	snap, err := s.store.GetSnapshot(ctx, id)
	if err != nil {
		return api.Snapshot{}, err
	}
	return snapshotToAPI(snap), nil
}

// ListSnapshots returns the caller's snapshots, newest first; sandbox,
// when set, keeps one sandbox's.
func (s *Service) ListSnapshots(ctx context.Context, sandbox string) ([]api.Snapshot, error) {
	list, err := s.store.ListSnapshots(ctx, store.SnapshotQuery{SandboxID: sandbox})
	if err != nil {
		return nil, err
	}
	out := make([]api.Snapshot, 0, len(list))
	for i := range list {
		out = append(out, snapshotToAPI(&list[i]))
	}
	return out, nil
}

// DeleteSnapshot deletes one of the caller's snapshots and its files.
func (s *Service) DeleteSnapshot(ctx context.Context, id string) error {
	snap, err := s.store.GetSnapshot(ctx, id)
	if err != nil {
		return err
	}
	d, ok := s.drivers.Get(snap.Driver)
	if !ok {
		return errdefs.Unavailable("driver_unavailable", "the %s driver that keeps snapshot %s is not loaded", snap.Driver, id)
	}
	sn, ok := d.(driver.Snapshotter)
	if !ok {
		return errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported", "the %s driver keeps no snapshots", d.Name())
	}
	if err := s.store.DeleteSnapshot(ctx, id); err != nil {
		return err
	}
	if err := sn.RemoveSnapshot(s.snapshotDir(id)); err != nil {
		s.log.Error("remove a deleted snapshot's files", "snapshot", id, "err", err)
	}
	s.emit(ctx, &store.Sandbox{ID: snap.SandboxID, TenantID: snap.TenantID}, api.EventSnapshotDeleted, "snapshot "+id+" deleted",
		map[string]any{"snapshot": id})
	return nil
}

// Restore gives the caller's running sandbox id exactly the files of the
// snapshot: its processes end, and it runs again from the snapshot's
// files. The snapshot must be over the same template and driver.
func (s *Service) Restore(ctx context.Context, id string, req api.RestoreRequest) (api.Sandbox, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	snap, err := s.store.GetSnapshot(ctx, req.Snapshot)
	if err != nil {
		return api.Sandbox{}, err
	}
	if snap.Template != rec.Template || snap.Driver != rec.Driver {
		return api.Sandbox{}, errdefs.Invalid("snapshot_mismatch", "snapshot %s is of a %s sandbox from template %q; sandbox %s is %s from %q",
			snap.ID, snap.Driver, snap.Template, id, rec.Driver, rec.Template)
	}
	if err := s.snapshotHere(ctx, snap); err != nil {
		return api.Sandbox{}, err
	}
	if rec.State == api.StatePaused {
		if rec, err = s.resume(ctx, rec, map[string]any{"reason": ReasonRequest, "op": "restore"}); err != nil {
			return api.Sandbox{}, err
		}
	}
	if rec.State != api.StateRunning {
		return api.Sandbox{}, errdefs.Conflict("sandbox_not_running", "sandbox %s is %s; start it, then restore", id, rec.State)
	}
	d, sn, err := s.drivers.snapshotter(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	rec, err = s.takeDown(tctx, rec, d, OpRestore, func() (err error) {
		h, err = sn.Restore(tctx, h, s.snapshotDir(snap.ID))
		return err
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	raw, err := s.seals.encodeHandle(rec, h)
	if err != nil {
		return api.Sandbox{}, err
	}
	rec, err = s.transition(tctx, id, OpRestore, api.StateRunning, func(sb *store.Sandbox) {
		sb.Handle = raw
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.attach(tctx, rec, d, h)
	s.emit(tctx, rec, api.EventSandboxRestored, "sandbox restored from snapshot "+snap.ID, map[string]any{"snapshot": snap.ID})
	return s.toAPI(rec), nil
}

// Fork starts req.Count sandboxes from the caller's sandbox id's files as
// they are now, with its settings (not its volumes). The copy is taken
// once, under the sandbox's lock, then dropped once the forks have their
// own. Either all the forks are made or none: one refused (a quota, say)
// destroys those made before it.
func (s *Service) Fork(ctx context.Context, id string, req api.ForkRequest) (api.ForkResult, error) {
	var out api.ForkResult
	if req.Count < 1 || req.Count > api.MaxForkCount {
		return out, errdefs.Invalid("invalid_count", "count must be from 1 to %d", api.MaxForkCount)
	}
	unlock := s.locks.Lock(id)
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		unlock()
		return out, err
	}
	snap, st, err := s.capture(ctx, rec, "fork of "+id, false)
	unlock()
	if err != nil {
		return out, err
	}
	out.PauseMS = st.Pause.Milliseconds()
	defer func() {
		if err := s.DeleteSnapshot(context.WithoutCancel(ctx), snap.ID); err != nil {
			s.log.Error("drop a fork's snapshot", "snapshot", snap.ID, "err", err)
		}
	}()
	env, err := s.seals.openEnv(rec)
	if err != nil {
		return out, err
	}
	labels := map[string]string{}
	for k, v := range rec.Labels {
		labels[k] = v
	}
	for k, v := range req.Labels {
		labels[k] = v
	}
	limits := rec.Limits
	for i := range req.Count {
		// The last fork takes the snapshot's files: one copy fewer.
		sb, err := s.create(ctx, api.CreateSandboxRequest{
			Snapshot: snap.ID, Env: env, Cwd: rec.Cwd, Limits: &limits, TimeoutS: rec.TimeoutS, Labels: labels,
			Root: rec.Root, Network: &rec.Network, Driver: rec.Driver,
		}, i == req.Count-1)
		if err != nil {
			// All or none: the forks made so far go too.
			for _, f := range out.Sandboxes {
				if derr := s.Destroy(ctx, f.ID); derr != nil {
					s.log.Error("roll back a fork", logattr.Sandbox(f.ID), "err", derr)
				}
			}
			return api.ForkResult{}, err
		}
		out.Sandboxes = append(out.Sandboxes, sb)
	}
	return out, nil
}

// snapshotGrace is how old a copy under way (a hidden name) must be
// before a sweep takes it for a crash's leftovers.
const snapshotGrace = 30 * time.Minute

// sweepSnapshots removes the files of snapshots no record names, left by
// a server that stopped between a copy and its record; the default
// driver made them.
func (s *Service) sweepSnapshots(ctx context.Context) error {
	if s.cfg.SnapshotDir == "" {
		return nil
	}
	ents, err := os.ReadDir(s.cfg.SnapshotDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("sweep snapshots: %w", err)
	}
	sn, ok := s.drivers.Default().(driver.Snapshotter)
	if !ok || len(ents) == 0 {
		return nil
	}
	all, err := s.store.ListSnapshots(ctx, store.SnapshotQuery{})
	if err != nil {
		return fmt.Errorf("sweep snapshots: %w", err)
	}
	known := make(map[string]bool, len(all))
	for _, snap := range all {
		known[snap.ID] = true
	}
	s.mu.Lock()
	for id := range s.capturing {
		known[id] = true
	}
	s.mu.Unlock()
	for _, e := range ents {
		info, err := e.Info()
		// A name with a dot is a copy under way (or a crash's): the
		// backend renames it into place when whole. The copy of a
		// snapshot (.<id>.tmp-…) this server is not taking goes at once:
		// a crash mid-copy left it, and the grace would keep it past
		// the start-up sweep (it held every crash's copy for 30 minutes).
		id, _, isCopy := strings.Cut(strings.TrimPrefix(e.Name(), "."), ".tmp-")
		crashed := isCopy && ids.Valid(id) && !known[id]
		if known[e.Name()] || err != nil || (strings.HasPrefix(e.Name(), ".") && !crashed && time.Since(info.ModTime()) < snapshotGrace) {
			continue
		}
		if err := sn.RemoveSnapshot(s.snapshotDir(e.Name())); err != nil {
			return fmt.Errorf("sweep snapshots: %w", err)
		}
		s.log.Info("swept an unrecorded snapshot's files", "snapshot", e.Name())
	}
	return nil
}

// snapshotDir is where the files of snapshot id are.
func (s *Service) snapshotDir(id string) string { return filepath.Join(s.cfg.SnapshotDir, id) }

func snapshotToAPI(s *store.Snapshot) api.Snapshot {
	return api.Snapshot{ID: s.ID, Name: s.Name, SandboxID: s.SandboxID, Template: s.Template, Driver: s.Driver,
		Bytes: s.Bytes, Files: s.Files, PauseMS: s.PauseMS, CreatedAt: s.CreatedAt}
}

// snapshotHere refuses, before anything of the sandbox is touched, a
// restore from snap when its files are on another node's disk (that of
// the sandbox it was taken of): 409 snapshot_elsewhere.
func (s *Service) snapshotHere(ctx context.Context, snap *store.Snapshot) error {
	node, err := s.snapshotNode(ctx, snap)
	if err != nil || node == "" || node == s.cfg.Node {
		return err
	}
	return errdefs.Conflict("snapshot_elsewhere", "snapshot %s is on node %s's disk, and this sandbox runs on node %s: restore a sandbox of node %s from it, or create a new sandbox from it (it is made there)",
		snap.ID, node, s.cfg.Node, node)
}

// SnapshotNode is the node whose disk keeps the caller's snapshot id's
// files (snapshotNode).
func (s *Service) SnapshotNode(ctx context.Context, id string) (string, error) {
	snap, err := s.store.GetSnapshot(ctx, id)
	if err != nil {
		return "", err
	}
	return s.snapshotNode(ctx, snap)
}

// snapshotNode is the node whose disk keeps snap's files: the node of the
// sandbox it was taken of (a sandbox's record, and so its node, outlives
// it); "" when its driver keeps snapshots off any node's disk
// (Capabilities.SharedSnapshots), so that any node starts from it.
func (s *Service) snapshotNode(ctx context.Context, snap *store.Snapshot) (string, error) {
	if d, ok := s.drivers.Get(snap.Driver); ok && d.Capabilities().SharedSnapshots {
		return "", nil
	}
	of, err := s.store.GetSandbox(ctx, snap.SandboxID)
	if err != nil {
		return "", err
	}
	return of.Node, nil
}
