package agentclient

import (
	"bytes"
	"context"
	"net/http"
)

// Bootstrap hands a warm agent (one this client's token is the warm
// token of) its sandbox's envelope, sealed for that token
// (envelope.Seal). The agent then serves the sandbox with the envelope's
// token, on a listener of its own: this client is done.
func (c *Client) Bootstrap(ctx context.Context, sealed []byte) error {
	resp, err := c.do(ctx, http.MethodPost, "/bootstrap", nil, rawBody{bytes.NewReader(sealed)}, "")
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}
