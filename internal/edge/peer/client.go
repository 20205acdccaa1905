package peer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/edge/forward"
)

// maxErrorBytes bounds the error answer read from another node.
const maxErrorBytes = 64 << 10

// Client fetches from other nodes over the forwarder's signed channel:
// it is the templates service's Peers.
type Client struct {
	Forward *forward.Forwarder
}

// FetchBlob implements templates.Peers.
func (c Client) FetchBlob(ctx context.Context, node, tenantID, name, digest string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, blobPath(tenantID, name, digest), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Forward.Call(req, node)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	var e api.Error
	json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&e)
	return nil, errdefs.FromHTTP(resp.StatusCode, e.Error.Code, "node "+node+": "+e.Error.Message)
}
