package router

import (
	"net/http"

	"github.com/hutchdev/hutch/internal/edge/forward"
)

// In a fleet, the node a preview or app request reaches lets it in as
// always (authorize, authorizeApp: every node signs and checks preview
// URLs and cookies with one key, which the server derives from the
// cluster key), then passes it to the node that runs the sandbox, as the
// key that let it in: that node takes the hop's word for the
// credential, re-checking the key by id (hopIn), and proxies it to the
// sandbox's port.

// pass proxies here to ex's sandbox's port, or forwards came to node
// when another node runs the sandbox. here is came as this node
// proxies it (an app's dev request with its /dev prefix stripped);
// another node is forwarded the request as it came, which it routes by
// its own reading.
func (rt *Router) pass(w http.ResponseWriter, came, here *http.Request, ex *exchange, node string) {
	if f := rt.cfg.Forward; f != nil && node != "" && node != f.Node() {
		ex.access += "+forwarded"
		f.Forward(w, came, node, ex.keyID)
		return
	}
	rt.proxy.ServeHTTP(w, here)
}

// hopIn lets in r, which node hop.From let in and forwarded here, as the
// key it names; the key must still stand and be of tenantID's ("": the
// sandbox or app does not exist, answered notFound). A hop without a key
// was let in as public there and is not here: the port or app turned
// private meanwhile.
func (rt *Router) hopIn(w http.ResponseWriter, r *http.Request, ex *exchange, hop forward.Hop, tenantID string, notFound page) (*http.Request, bool) {
	if hop.KeyID == "" {
		rt.fail(w, r, ex, pagePrivate, "unauthorized")
		return nil, false
	}
	g, err := rt.admitKeyID(r, hop.KeyID)
	if err != nil {
		rt.fail(w, r, ex, pageBadKey, "unauthorized")
		return nil, false
	}
	r = rt.serveAs(r, ex, g)
	if tenantID == "" || g.p.TenantID != tenantID {
		rt.fail(w, r, ex, notFound, "not_found")
		return nil, false
	}
	if readerRefused(g.p, r) {
		rt.fail(w, r, ex, pageReaderRefused, "forbidden")
		return nil, false
	}
	ex.access = "forwarded"
	return r, true
}
