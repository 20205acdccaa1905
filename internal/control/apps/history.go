package apps

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Checkpoint saves the dev sandbox's app files now.
func (s *Service) Checkpoint(ctx context.Context, id string, req api.CreateCheckpointRequest) (api.Checkpoint, error) {
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.Checkpoint{}, err
	}
	cp, err := s.sbx.Checkpoint(ctx, a.Dev, Dir, req.Message, api.CheckpointManual)
	if err != nil {
		return api.Checkpoint{}, err
	}
	s.emit(a, api.EventCheckpoint, "checkpoint "+cp.ID+" taken", map[string]any{"checkpoint": cp.ID, "kind": cp.Kind})
	return cp, nil
}

// Checkpoints lists the dev sandbox's checkpoints, newest first.
func (s *Service) Checkpoints(ctx context.Context, id string) (api.CheckpointList, error) {
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.CheckpointList{}, err
	}
	cps, err := s.sbx.Checkpoints(ctx, a.Dev, Dir)
	if err != nil {
		return api.CheckpointList{}, err
	}
	return api.CheckpointList{Checkpoints: cps}, nil
}

// Undo restores the dev sandbox's app files to a checkpoint (Steps back,
// 1 by default: the state before the last task), exactly, and restarts the
// app's processes. The agent does both, so it works when the app itself
// has crashed. A running task is refused: cancel it first.
func (s *Service) Undo(ctx context.Context, id string, req api.UndoRequest) (api.UndoResult, error) {
	if req.Steps < 0 || (req.Steps > 0 && req.Checkpoint != "") {
		return api.UndoResult{}, errdefs.Invalid("invalid_undo", "give steps (1 or more) or a checkpoint, not both")
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.UndoResult{}, err
	}
	if t := s.runningTask(ctx, a.ID); t != "" {
		return api.UndoResult{}, errdefs.Conflict("task_running", "task %s is running; cancel it before undoing", t)
	}
	target := req.Checkpoint
	if target == "" {
		if target, err = s.stepsBack(ctx, a.Dev, max(req.Steps, 1)); err != nil {
			return api.UndoResult{}, err
		}
	}
	res, err := s.sbx.RestoreCheckpoint(ctx, a.Dev, Dir, target)
	if err != nil {
		return api.UndoResult{}, err
	}
	if _, err := s.sbx.AppRestart(ctx, a.Dev, nil); err != nil && !errdefs.HasCode(err, "app_not_configured") {
		return api.UndoResult{}, fmt.Errorf("restart the app after the undo: %w", err)
	}
	out := api.UndoResult{Restored: res.Restored, PreUndo: res.PreUndo, Changes: res.Changes}
	s.emit(a, api.EventAppUndone, fmt.Sprintf("files restored to checkpoint %s (%d changed)", res.Restored.ID, len(out.Changes)),
		map[string]any{"checkpoint": res.Restored.ID, "pre_undo": res.PreUndo.ID, "files_changed": len(out.Changes)})
	return out, nil
}

// stepsBack is the id of the n-th checkpoint back, counting those taken
// before tasks and on request from the newest, not those an undo took of
// what it replaced (undo to an undo's pre_undo id takes it back).
func (s *Service) stepsBack(ctx context.Context, sandboxID string, n int) (string, error) {
	cps, err := s.sbx.Checkpoints(ctx, sandboxID, Dir)
	if err != nil {
		return "", err
	}
	left := n
	for _, cp := range cps {
		if cp.Kind == api.CheckpointPreUndo {
			continue
		}
		if left--; left == 0 {
			return cp.ID, nil
		}
	}
	return "", errdefs.NotFound("checkpoint_not_found", "the app's history holds fewer than %d checkpoints to go back to", n)
}
