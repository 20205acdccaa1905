package api

import "time"

// HostTemplate is the template every driver builds from its host: the
// host's system directories, read-only. A sandbox starts from it unless it
// names another template or the server's default is another.
const HostTemplate = "host"

// MaxTemplateName bounds a template's name; names follow the rules of
// secret names and are unique within a tenant.
const MaxTemplateName = 128

// Event types about a tenant's templates; each carries the template's
// "name" and "digest" in Data.
const (
	EventTemplateCreated = "template.created"
	EventTemplateDeleted = "template.deleted"
)

// ImageConfig is what of an image's configuration a sandbox started from
// it takes as its defaults: its environment (under the request's env), its
// working directory (unless the request names one) and its user (unless
// the request asks for root).
type ImageConfig struct {
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"working_dir,omitempty"`
	User       string   `json:"user,omitempty"`
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
}

// Template is an image sandboxes start from, as the API shows it.
type Template struct {
	Name string `json:"name"`
	// Source is the registry reference it was pulled from, "upload", or
	// the snapshot it was made from.
	Source string      `json:"source"`
	Digest string      `json:"digest"` // the image manifest's
	Config ImageConfig `json:"config"`
	Layers int         `json:"layers"`
	// Bytes is the size of the image's files, unpacked.
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
	// Node, in a fleet, is the one node a sandbox of it is made on: that
	// of a template made from a snapshot (or before hutch kept image
	// blobs), which only that node holds. Empty when any node may: an
	// image template's layers are fetched by a node that lacks them.
	Node string `json:"node,omitempty"`
}

// CreateTemplateRequest is the JSON body of POST /v1/templates: pull an
// image from a registry. (An image archive is uploaded instead as the
// body itself, Content-Type application/x-tar, with ?name=.)
type CreateTemplateRequest struct {
	Name string `json:"name"`
	// Ref is the image's reference: "registry.example.com/team/app:1.2",
	// "debian:bookworm" (Docker Hub), or by digest "…@sha256:…".
	Ref string `json:"ref"`
	// Username and PasswordSecret log in to the registry: the password is
	// the value of the caller's secret of that name, read by the server
	// (it never travels in the request). It must be a registry secret
	// (SecretKindRegistry) bound to the registry Ref names, and is sent to
	// that host and port alone. Both empty: anonymous.
	Username       string `json:"username,omitempty"`
	PasswordSecret string `json:"password_secret,omitempty"`
	// Platform picks one image of a multi-platform index, such as
	// "linux/arm64"; empty means the server's own.
	Platform string `json:"platform,omitempty"`
	// Snapshot, instead of Ref, makes the template from one of the
	// caller's snapshots: the snapshot's files as a layer over its
	// sandbox's template (the host's or an image's), so sandboxes start
	// from the environment an agent prepared once, without copying it.
	Snapshot string `json:"snapshot,omitempty"`
}

// TemplateList is the body of GET /v1/templates.
type TemplateList struct {
	Templates []Template `json:"templates"`
}
