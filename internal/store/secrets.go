package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Secrets keeps the tenants' secrets. They are addressed by name within
// the principal's tenant, always: even the system needs a principal for
// them (code "no_tenant"), and an admin reaches only its own tenant's.
// The store keeps only the sealed value (internal/control/secrets seals
// and opens it).
type Secrets interface {
	// CreateSecret stores sec in the caller's tenant, setting sec.TenantID
	// (the system may set it itself), an ID if empty, CreatedAt to now and
	// UpdatedAt to CreatedAt if zero. A name already used in the tenant is
	// a conflict (code "secret_exists").
	CreateSecret(ctx context.Context, sec *Secret) error
	// GetSecret returns one of the caller's tenant's secrets by name, its
	// sealed value included.
	GetSecret(ctx context.Context, name string) (*Secret, error)
	// ListSecrets returns the caller's tenant's secrets by name (every
	// tenant's, by tenant and name, for the system without a principal).
	ListSecrets(ctx context.Context) ([]Secret, error)
	// UpdateSecret reads a secret, lets fn change it and writes it back in
	// one write transaction, and returns what it wrote. An error from fn
	// aborts the update and is returned as is; fn must not call the store.
	// ID, TenantID, Name, Kind, Registry and CreatedAt cannot be changed;
	// UpdatedAt is set to now.
	UpdateSecret(ctx context.Context, name string, fn func(*Secret) error) (*Secret, error)
	// DeleteSecret deletes one of the caller's tenant's secrets.
	DeleteSecret(ctx context.Context, name string) error
	// SecretKeyIDs counts every tenant's secrets by the ID of the master
	// key that sealed them. System only: the start-up check that the
	// server's key can open what is stored.
	SecretKeyIDs(ctx context.Context) (map[string]int, error)
}

// Secret is a secret's persisted record: metadata and the value as sealed
// by internal/control/secrets. The store never sees a plaintext value.
type Secret struct {
	ID          string
	TenantID    string
	Name        string // unique in its tenant; see CheckSecretName
	Description string
	// Kind is what the value may be used for, api.SecretKindEnv or
	// api.SecretKindRegistry; Registry is the host a registry secret is
	// bound to (canonical, internal/runtime/host/oci/image.RegistryHost),
	// and empty for any other kind. Both are set at creation.
	Kind       string
	Registry   string
	ValueBytes int    // the plaintext's length
	KeyID      string // the master key that sealed the value
	Nonce      []byte
	Ciphertext []byte // the sealed value, with its authentication tag
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// CheckSecretName validates a secret's name: 1 to api.MaxSecretName
// characters of A-Z, a-z, 0-9, '_', '.' and '-', the first not '.' or
// '-'.
func CheckSecretName(name string) error {
	if !validName(name, api.MaxSecretName) {
		return errdefs.Invalid("invalid_secret_name",
			"a secret's name must be 1-%d characters of A-Z, a-z, 0-9, '_', '.' and '-', not starting with '.' or '-'",
			api.MaxSecretName)
	}
	return nil
}

// CheckSecretKind validates a secret's kind and registry host: a registry
// secret names its host, a secret of another kind none. It does not check
// the host's form (internal/control/secrets does, as pulls name hosts).
func CheckSecretKind(kind, registry string) error {
	switch kind {
	case api.SecretKindEnv:
		if registry != "" {
			return errdefs.Invalid("invalid_secret_kind", "only a secret of kind %q is bound to a registry; this one is of kind %q",
				api.SecretKindRegistry, kind)
		}
	case api.SecretKindRegistry:
		if registry == "" {
			return errdefs.Invalid("invalid_secret_kind", "a secret of kind %q needs the registry host it is bound to, in \"registry\"",
				api.SecretKindRegistry)
		}
	default:
		return errdefs.Invalid("invalid_secret_kind", "a secret's kind is %q (the default) or %q", api.SecretKindEnv, api.SecretKindRegistry)
	}
	return nil
}

// validName reports whether name is 1 to max characters of A-Z, a-z, 0-9,
// '_', '.' and '-', the first not '.' or '-': the names of secrets and
// templates, safe as a file name and never a flag.
func validName(name string, max int) bool {
	ok := name != "" && len(name) <= max && name[0] != '.' && name[0] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	return ok
}

// CheckSecret validates sec and normalises it: an empty Kind is
// api.SecretKindEnv; CreatedAt is set to now and UpdatedAt to CreatedAt if
// zero.
func CheckSecret(sec *Secret) error {
	if sec.ID == "" || sec.TenantID == "" {
		return errdefs.Invalid("invalid_secret", "a secret needs an id and a tenant")
	}
	if err := CheckSecretName(sec.Name); err != nil {
		return err
	}
	if sec.Kind == "" {
		sec.Kind = api.SecretKindEnv
	}
	if err := CheckSecretKind(sec.Kind, sec.Registry); err != nil {
		return err
	}
	if len(sec.Description) > api.MaxSecretDescription {
		return errdefs.Invalid("invalid_secret", "a secret's description must be at most %d bytes", api.MaxSecretDescription)
	}
	if sec.KeyID == "" || len(sec.Nonce) == 0 || len(sec.Ciphertext) == 0 || sec.ValueBytes < 0 {
		return errdefs.Invalid("invalid_secret", "a secret needs a sealed value and the id of the key that sealed it")
	}
	sec.CreatedAt = orNow(sec.CreatedAt)
	if sec.UpdatedAt.IsZero() {
		sec.UpdatedAt = sec.CreatedAt
	}
	sec.UpdatedAt = Time(sec.UpdatedAt)
	return nil
}

// NamedScope returns the tenant whose resources of a kind addressed by
// name (secrets, templates, volumes) a call in ctx means: the
// principal's, even for the system. Without a principal it is an
// ErrForbidden error, code "no_tenant".
func NamedScope(ctx context.Context, kind string) (Scope, error) {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return sc, err
	}
	if sc.TenantID == "" {
		return sc, errdefs.Forbidden("no_tenant", "%s are addressed by name within one tenant: the call needs a principal", kind)
	}
	return sc, nil
}

// SecretNotFound is the answer for a secret that is missing or not the
// caller's.
func SecretNotFound(name string) error {
	return errdefs.NotFound("secret_not_found", "secret %q not found", name)
}

// SecretExists is the answer for a name already used in the tenant.
func SecretExists(name string) error {
	return errdefs.Conflict("secret_exists", "a secret named %q already exists; replace its value with PUT /v1/secrets/%s", name, name)
}
