package agentclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// LayerStats is what the agent said of a snapshot layer it wrote: how
// long the sandbox's processes were stopped, whether all were seen
// stopped, and the layer's entries and files' bytes.
type LayerStats struct {
	Pause          time.Duration
	Frozen         bool
	Entries, Bytes int64
}

// SnapshotLayer copies to w what changed in the sandbox's root since its
// agent started, as a tar in OCI layer form (GET /snapshot; the agent
// must have been asked for layer snapshots). A layer cut short is an
// error: its trailers never came.
func (c *Client) SnapshotLayer(ctx context.Context, w io.Writer) (LayerStats, error) {
	var st LayerStats
	resp, err := c.do(ctx, http.MethodGet, "/snapshot", nil, nil, "")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return st, fmt.Errorf("read the sandbox's snapshot layer: %w", err)
	}
	t := resp.Trailer
	if why := t.Get(agentproto.TrailerSnapshotError); why != "" {
		return st, fmt.Errorf("the sandbox's agent could not write its snapshot layer: %s", why)
	}
	pause, err := strconv.ParseInt(t.Get(agentproto.TrailerSnapshotPause), 10, 64)
	if err != nil {
		return st, fmt.Errorf("the sandbox's snapshot layer came without its trailers: it was cut short")
	}
	st.Pause = time.Duration(pause)
	st.Frozen = t.Get(agentproto.TrailerSnapshotFrozen) == "true"
	st.Entries, _ = strconv.ParseInt(t.Get(agentproto.TrailerSnapshotEntries), 10, 64)
	st.Bytes, _ = strconv.ParseInt(t.Get(agentproto.TrailerSnapshotBytes), 10, 64)
	return st, nil
}
