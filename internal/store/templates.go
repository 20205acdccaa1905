package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Templates keeps the tenants' templates. They are addressed by name
// within the principal's tenant, as secrets are.
type Templates interface {
	// CreateTemplate stores t in the caller's tenant, setting t.TenantID,
	// an ID if empty and CreatedAt if zero. A name already used in the
	// tenant is a conflict (code "template_exists").
	CreateTemplate(ctx context.Context, t *Template) error
	// GetTemplate returns one of the caller's tenant's templates by name.
	GetTemplate(ctx context.Context, name string) (*Template, error)
	// ListTemplates returns the caller's tenant's templates by name (every
	// tenant's, by tenant and name, for the system without a principal:
	// the layer store's garbage collection).
	ListTemplates(ctx context.Context) ([]Template, error)
	// DeleteTemplate deletes one of the caller's tenant's templates,
	// unless a sandbox of the tenant not yet destroyed, or a snapshot,
	// names it (code "template_in_use"), checked in the same transaction.
	DeleteTemplate(ctx context.Context, name string) error
	// DeleteTemplatesByTenant deletes every template record of tenantID
	// left and returns how many; the layer store's collection removes what
	// they named. System only: a tenant's deletion, once its sandboxes and
	// snapshots are gone.
	DeleteTemplatesByTenant(ctx context.Context, tenantID string) (int, error)
}

// Template is an image a tenant imported or pulled: what its sandboxes
// start from. Its layers are unpacked once into the layer store, shared by
// every template (of any tenant) that names them; the record keeps their
// diff ids, bottom first.
type Template struct {
	ID       string
	TenantID string
	Name     string // unique in its tenant; see CheckTemplateName
	Source   string // the reference or file it came from, for people
	Digest   string // the image manifest's digest
	Config   api.ImageConfig
	Layers   []string // diff ids ("sha256:<hex>"), bottom first
	Bytes    int64    // the unpacked layers' file sizes
	// Flat is the id of a flattened copy of the whole image, kept instead
	// of shared layers where the host cannot share them (hutch without
	// root); "" when the layers are shared.
	Flat string
	// Base is "host" for a template made from a snapshot of a sandbox of
	// the host template: its layers lie over the host template. "" for an
	// image's.
	Base      string
	CreatedAt time.Time
	// Node is the node whose disk holds its layers ("" for one made
	// before nodes were recorded: the one node's).
	Node string
}

// CheckTemplateName validates a template's name: as a secret's, and never
// "host", the name of the template every driver builds from the host.
func CheckTemplateName(name string) error {
	if name == api.HostTemplate {
		return errdefs.Invalid("invalid_template_name", "%q is the host template's name; pick another", name)
	}
	if !validName(name, api.MaxTemplateName) {
		return errdefs.Invalid("invalid_template_name",
			"a template's name must be 1-%d characters of A-Z, a-z, 0-9, '_', '.' and '-', not starting with '.' or '-'",
			api.MaxTemplateName)
	}
	return nil
}

// CheckTemplate validates t and sets CreatedAt to now if zero.
func CheckTemplate(t *Template) error {
	if t.ID == "" || t.TenantID == "" {
		return errdefs.Invalid("invalid_template", "a template needs an id and a tenant")
	}
	if err := CheckTemplateName(t.Name); err != nil {
		return err
	}
	if t.Base != "" && t.Base != api.HostTemplate {
		return errdefs.Invalid("invalid_template", "a template's base is %q or none", api.HostTemplate)
	}
	if t.Digest == "" || (len(t.Layers) == 0 && t.Flat == "") {
		return errdefs.Invalid("invalid_template", "a template needs its image's digest and its layers")
	}
	t.CreatedAt = orNow(t.CreatedAt)
	return nil
}

// TemplateNotFound is the answer for a template that is missing or not
// the caller's.
func TemplateNotFound(name string) error {
	return errdefs.NotFound("template_not_found", "template %q not found", name)
}

// TemplateExists is the answer for a name already used in the tenant.
func TemplateExists(name string) error {
	return errdefs.Conflict("template_exists", "a template named %q already exists; delete it first to replace it", name)
}

// TemplateInUse is the answer to deleting a template sandboxes still
// start from.
func TemplateInUse(name string, n int) error {
	return errdefs.Conflict("template_in_use", "template %q is the root of %d sandbox(es) not destroyed and snapshot(s); destroy or delete them first", name, n)
}
