package agentclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// The file history of directories in the sandbox. An agent without
// agentproto.FeatureHistory is not asked: the error is agent_too_old
// (ErrUnsupported). An unknown checkpoint is checkpoint_not_found
// (ErrNotFound).

// Checkpoint records req.Dir as a new checkpoint.
func (c *Client) Checkpoint(ctx context.Context, req agentproto.CheckpointRequest) (agentproto.Checkpoint, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return agentproto.Checkpoint{}, c.tooOld("checkpointing a directory", agentproto.FeatureHistory)
	}
	var cp agentproto.Checkpoint
	err := c.doJSON(ctx, http.MethodPost, "/history/checkpoints", nil, req, &cp)
	return cp, err
}

// Checkpoints lists the checkpoints of dir, newest first; none when dir
// was never checkpointed.
func (c *Client) Checkpoints(ctx context.Context, dir string) ([]agentproto.Checkpoint, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return nil, c.tooOld("listing a directory's checkpoints", agentproto.FeatureHistory)
	}
	var out agentproto.CheckpointList
	if err := c.doJSON(ctx, http.MethodGet, "/history/checkpoints", url.Values{"dir": {dir}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Checkpoints, nil
}

// RestoreCheckpoint makes req.Dir exactly the checkpoint req names, after
// checkpointing it as it is (the result's PreUndo).
func (c *Client) RestoreCheckpoint(ctx context.Context, req agentproto.RestoreRequest) (agentproto.RestoreResult, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return agentproto.RestoreResult{}, c.tooOld("restoring a checkpoint", agentproto.FeatureHistory)
	}
	var res agentproto.RestoreResult
	err := c.doJSON(ctx, http.MethodPost, "/history/restore", nil, req, &res)
	return res, err
}

// HistoryDiff lists how dir changed from checkpoint from to checkpoint
// to, or, with to empty, to dir as it is now.
func (c *Client) HistoryDiff(ctx context.Context, dir, from, to string) ([]agentproto.Change, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return nil, c.tooOld("comparing checkpoints", agentproto.FeatureHistory)
	}
	q := url.Values{"dir": {dir}, "from": {from}}
	if to != "" {
		q.Set("to", to)
	}
	var out agentproto.ChangeList
	if err := c.doJSON(ctx, http.MethodGet, "/history/diff", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}
