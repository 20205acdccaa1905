package forward

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// NodeCall is the key id of a call a node makes of its own (Call): no
// client's key, and never a key id (those are ULIDs), nor a preview's ""
// which a client's request forwarded to a sandbox's port carries, so a
// handler of node-to-node calls tells them from any client's request.
const NodeCall = "node"

// Call sends req, a request this node makes of its own (no client's), to
// node to's API, signed as any hop is, as key id NodeCall: the receiving
// node's Accept verifies it, and its handler finds the Hop (HopFrom)
// with KeyID NodeCall. req's URL holds the path and query only; its context
// bounds the call. Without a cluster key it is 503 cluster_key_missing;
// a node unknown, lost or unreachable, 503 node_unavailable within the
// dial bound. The caller closes the response's body.
func (f *Forwarder) Call(req *http.Request, to string) (*http.Response, error) {
	if len(f.cfg.Key) == 0 {
		return nil, errdefs.New(errdefs.ErrUnavailable, "cluster_key_missing",
			"node %s holds what this node needs, and this node has no cluster key to reach it ($HUTCH_CLUSTER_KEY or <data>/cluster.key on every node)", to)
	}
	u, kept, err := f.resolve(req.Context(), to)
	if err != nil {
		return nil, callUnavailable(to, err)
	}
	resp, err := f.call(req, u, to)
	if err != nil && kept && dialFailed(err) && (req.Body == nil || req.Body == http.NoBody) {
		// The address kept may be stale (forward): once more on the
		// registry's, if it says another.
		if fresh, ok := f.moved(req.Context(), to, u); ok {
			resp, err = f.call(req, fresh, to)
		}
	}
	if err != nil {
		if cause := context.Cause(req.Context()); cause != nil {
			return nil, cause
		}
		return nil, callUnavailable(to, err)
	}
	return resp, nil
}

// call sends req to node to at u, signed.
func (f *Forwarder) call(req *http.Request, u *url.URL, to string) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL = &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/") + req.URL.Path, RawQuery: req.URL.RawQuery}
	out.Host, out.RequestURI = out.URL.Host, ""
	stripHeaders(out.Header)
	sign(f.cfg.Key, out, NodeCall, f.cfg.Node, to, f.cfg.Now())
	return f.tr.RoundTrip(out)
}

func callUnavailable(to string, err error) error {
	return errdefs.Wrap(errdefs.ErrUnavailable, "node_unavailable", err, "node %s cannot be reached; try again later", to)
}
