// Package peer serves what one node of a fleet asks of another for
// itself, never for a client: today a template's layer blobs, which a
// node that lacks a template's layers fetches from one that holds them
// (internal/control/templates, fetch.go).
//
// The calls travel the node-to-node channel of internal/edge/forward:
// signed with the cluster key by Forwarder.Call, verified by
// Forwarder.Accept in front of every handler, and answered here only
// when they came that way (a client's request for these paths is 404).
// Each names its tenant in its signed path and is served in that tenant
// alone, so a tenant's template never reaches another tenant.
//
// Lifecycle: Mount wraps the server's handler (inside Accept); Client is
// the templates service's Peers, stateless over the Forwarder.
package peer

import (
	"net/url"
	"strings"
)

// Prefix is where the node-to-node calls are served.
const Prefix = "/internal/v1/"

// blobPath is the path of tenantID's template name's blob digest
// ("sha256:<hex>"; the path holds the hex).
func blobPath(tenantID, name, digest string) string {
	return Prefix + "tenants/" + url.PathEscape(tenantID) + "/templates/" + url.PathEscape(name) +
		"/blobs/" + url.PathEscape(strings.TrimPrefix(digest, "sha256:"))
}
