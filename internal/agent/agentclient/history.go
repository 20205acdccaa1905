package agentclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// The file history of directories in the sandbox. An agent without
// agentproto.FeatureHistory is not asked: the error is agent_too_old
// (ErrUnsupported). An unknown checkpoint is checkpoint_not_found
// (ErrNotFound).

// Checkpoint records dir as a new checkpoint, with a message and of a
// kind (api.CheckpointTask, api.CheckpointManual, …).
func (c *Client) Checkpoint(ctx context.Context, dir, message, kind string) (api.Checkpoint, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return api.Checkpoint{}, c.tooOld("checkpointing a directory", agentproto.FeatureHistory)
	}
	var cp agentproto.Checkpoint
	req := agentproto.CheckpointRequest{Dir: dir, Message: message, Kind: kind}
	if err := c.doJSON(ctx, http.MethodPost, "/history/checkpoints", nil, req, &cp); err != nil {
		return api.Checkpoint{}, err
	}
	return apiCheckpoint(cp), nil
}

// Checkpoints lists the checkpoints of dir, newest first; none when dir
// was never checkpointed.
func (c *Client) Checkpoints(ctx context.Context, dir string) ([]api.Checkpoint, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return nil, c.tooOld("listing a directory's checkpoints", agentproto.FeatureHistory)
	}
	var list agentproto.CheckpointList
	if err := c.doJSON(ctx, http.MethodGet, "/history/checkpoints", url.Values{"dir": {dir}}, nil, &list); err != nil {
		return nil, err
	}
	out := make([]api.Checkpoint, len(list.Checkpoints))
	for i, cp := range list.Checkpoints {
		out[i] = apiCheckpoint(cp)
	}
	return out, nil
}

// Restored is what a restore did: the checkpoint the directory now
// matches, the one taken of it just before (restoring it undoes the
// restore), and what changed.
type Restored struct {
	Restored, PreUndo api.Checkpoint
	Changes           []api.FileChange
}

// RestoreCheckpoint makes dir exactly its checkpoint id, after
// checkpointing it as it is (PreUndo).
func (c *Client) RestoreCheckpoint(ctx context.Context, dir, id string) (Restored, error) {
	if !c.Has(agentproto.FeatureHistory) {
		return Restored{}, c.tooOld("restoring a checkpoint", agentproto.FeatureHistory)
	}
	var res agentproto.RestoreResult
	if err := c.doJSON(ctx, http.MethodPost, "/history/restore", nil, agentproto.RestoreRequest{Dir: dir, ID: id}, &res); err != nil {
		return Restored{}, err
	}
	return Restored{Restored: apiCheckpoint(res.Restored), PreUndo: apiCheckpoint(res.PreUndo), Changes: apiChanges(res.Changes)}, nil
}

// HistoryDiff lists how dir changed from checkpoint from to checkpoint
// to, or, with to empty, to dir as it is now.
func (c *Client) HistoryDiff(ctx context.Context, dir, from, to string) ([]api.FileChange, error) {
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
	return apiChanges(out.Changes), nil
}

func apiCheckpoint(cp agentproto.Checkpoint) api.Checkpoint {
	return api.Checkpoint{ID: cp.ID, Message: cp.Message, Kind: cp.Kind, Files: cp.Files, Bytes: cp.Bytes, CreatedAt: cp.CreatedAt}
}

func apiChanges(cs []agentproto.Change) []api.FileChange {
	out := make([]api.FileChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, api.FileChange{Path: c.Path, Change: c.Change})
	}
	return out
}
