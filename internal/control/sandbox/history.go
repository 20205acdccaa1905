package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
)

// The file history of directories in a running sandbox, through the door:
// checkpoints the agent keeps on the sandbox's own disk, so they outlive
// the agent and this server. Checkpoints and restores write to that disk,
// so both check the disk guard first, as a file write does.

// Restored is what a restore did, as the agent client reads it.
type Restored = agentclient.Restored

// Checkpoint records dir as a new checkpoint, with a message and of a
// kind (api.CheckpointTask, …).
func (s *Service) Checkpoint(ctx context.Context, id, dir, message, kind string) (api.Checkpoint, error) {
	if err := s.cfg.Disk.Check("a checkpoint"); err != nil {
		return api.Checkpoint{}, err
	}
	return unary(ctx, s, id, "history.checkpoint", func(ctx context.Context, a *agentclient.Client) (api.Checkpoint, error) {
		return a.Checkpoint(ctx, dir, message, kind)
	})
}

// Checkpoints lists the checkpoints of dir, newest first.
func (s *Service) Checkpoints(ctx context.Context, id, dir string) ([]api.Checkpoint, error) {
	return unary(ctx, s, id, "history.list", func(ctx context.Context, a *agentclient.Client) ([]api.Checkpoint, error) {
		return a.Checkpoints(ctx, dir)
	})
}

// RestoreCheckpoint makes dir exactly its checkpoint cp; the result's
// PreUndo is the checkpoint that undoes it.
func (s *Service) RestoreCheckpoint(ctx context.Context, id, dir, cp string) (Restored, error) {
	if err := s.cfg.Disk.Check("a restore"); err != nil {
		return Restored{}, err
	}
	return unary(ctx, s, id, "history.restore", func(ctx context.Context, a *agentclient.Client) (Restored, error) {
		return a.RestoreCheckpoint(ctx, dir, cp)
	})
}

// HistoryDiff lists how dir changed from checkpoint from to checkpoint to,
// or, with to empty, to dir as it is.
func (s *Service) HistoryDiff(ctx context.Context, id, dir, from, to string) ([]api.FileChange, error) {
	return unary(ctx, s, id, "history.diff", func(ctx context.Context, a *agentclient.Client) ([]api.FileChange, error) {
		return a.HistoryDiff(ctx, dir, from, to)
	})
}
