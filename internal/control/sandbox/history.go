package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// The file history of directories in a running sandbox, through the door:
// checkpoints the agent keeps on the sandbox's own disk, so they outlive
// the agent and this server. Checkpoints and restores write to that disk,
// so both check the disk guard first, as a file write does.

// Checkpoint records req.Dir as a new checkpoint.
func (s *Service) Checkpoint(ctx context.Context, id string, req agentproto.CheckpointRequest) (agentproto.Checkpoint, error) {
	if err := s.cfg.Disk.Check("a checkpoint"); err != nil {
		return agentproto.Checkpoint{}, err
	}
	return unary(ctx, s, id, "history.checkpoint", func(ctx context.Context, a *agentclient.Client) (agentproto.Checkpoint, error) {
		return a.Checkpoint(ctx, req)
	})
}

// Checkpoints lists the checkpoints of dir, newest first.
func (s *Service) Checkpoints(ctx context.Context, id, dir string) ([]agentproto.Checkpoint, error) {
	return unary(ctx, s, id, "history.list", func(ctx context.Context, a *agentclient.Client) ([]agentproto.Checkpoint, error) {
		return a.Checkpoints(ctx, dir)
	})
}

// RestoreCheckpoint makes req.Dir exactly the checkpoint req names; the
// result's PreUndo is the checkpoint that undoes it.
func (s *Service) RestoreCheckpoint(ctx context.Context, id string, req agentproto.RestoreRequest) (agentproto.RestoreResult, error) {
	if err := s.cfg.Disk.Check("a restore"); err != nil {
		return agentproto.RestoreResult{}, err
	}
	return unary(ctx, s, id, "history.restore", func(ctx context.Context, a *agentclient.Client) (agentproto.RestoreResult, error) {
		return a.RestoreCheckpoint(ctx, req)
	})
}

// HistoryDiff lists how dir changed from checkpoint from to checkpoint to,
// or, with to empty, to dir as it is.
func (s *Service) HistoryDiff(ctx context.Context, id, dir, from, to string) ([]agentproto.Change, error) {
	return unary(ctx, s, id, "history.diff", func(ctx context.Context, a *agentclient.Client) ([]agentproto.Change, error) {
		return a.HistoryDiff(ctx, dir, from, to)
	})
}
