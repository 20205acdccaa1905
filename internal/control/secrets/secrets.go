// Package secrets owns hutch's secret store: a tenant's named values,
// sealed with AES-256-GCM under the server's master key before the store
// sees them, and write-only over the API.
//
// The master key (32 bytes) comes from $HUTCH_SECRETS_KEY or from
// <data>/secrets.key, made with mode 0600 on first start (LoadKey, Load).
// Only the cipher built from it stays in memory (Sealer). Every value gets
// a fresh random nonce, and its additional data binds it to its tenant and
// name. The store keeps the ID of the key that sealed each value, so key
// rotation can be added later: keep several Sealers by ID, open with the
// row's, re-seal with the newest. Rotation is not built.
//
// Values never leave the control plane: the API takes them and answers
// with metadata only; Reveal and RevealRegistry, for in-process users, are
// not reachable through the API. Value and api.SecretValue print as
// api.Redacted in logs, fmt and JSON, and no event or error message holds
// a value.
//
// A secret's kind says where its value may go, and is set at creation
// (kinds.go): an env secret (the default) goes where the operator
// configured, a provider key the gateway adds to calls (Reveal); a
// registry secret goes to the one registry host it is bound to, as a
// pull's password (RevealRegistry). Neither opens as the other, so a
// caller who picks a registry cannot have any other secret sent there,
// and a registry password never reaches a provider.
package secrets

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/store"
)

// DefaultMaxValueBytes is the largest value when Config names none.
const DefaultMaxValueBytes = 64 << 10

// eventTimeout bounds recording an event after the work is done.
const eventTimeout = 10 * time.Second

// Config is the service's limits.
type Config struct {
	MaxValueBytes int64 // largest value; DefaultMaxValueBytes if <= 0
	// Quotas admits each new secret against its tenant's quota of
	// secrets; nil admits every one.
	Quotas *quota.Service
}

// Service creates, replaces, lists and deletes a tenant's secrets and
// reveals their values in process. Every call acts in the tenant of ctx's
// principal (tenancy.From), like the store under it; another tenant's
// secret is not found. It is safe for concurrent use and holds nothing to
// close.
type Service struct {
	cfg    Config
	store  store.Secrets
	sealer *Sealer
	events events.Appender
	log    *slog.Logger
}

// CheckName validates a secret's name (store.CheckSecretName), for the
// parts that name secrets before they read them: the provider gateway's
// providers.
func CheckName(name string) error { return store.CheckSecretName(name) }

// New returns a Service sealing with sealer. events records secret.*
// events; log may be nil.
func New(cfg Config, st store.Secrets, sealer *Sealer, events events.Appender, log *slog.Logger) *Service {
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, store: st, sealer: sealer, events: events, log: log}
}

// Spec is a new secret's metadata, as POST /v1/secrets names it.
type Spec struct {
	Name        string
	Description string
	// Kind is api.SecretKindEnv (when empty) or api.SecretKindRegistry;
	// Registry is a registry secret's host, "host" or "host:port".
	Kind     string
	Registry string
}

// Create seals v and stores it as the secret spec.Name of the caller's
// tenant, of spec's kind: a registry secret is bound to spec.Registry, in
// its canonical form (image.RegistryHost). A name already in use is a
// conflict (code secret_exists). It returns the secret's metadata; the
// sealed value is left out.
func (s *Service) Create(ctx context.Context, spec Spec, v Value) (api.Secret, error) {
	tenantID, err := s.check(ctx, spec.Name, spec.Description, v)
	if err != nil {
		return api.Secret{}, err
	}
	kind, registry, err := checkKind(spec.Kind, spec.Registry)
	if err != nil {
		return api.Secret{}, err
	}
	nonce, ct, err := s.sealer.Seal(tenantID, spec.Name, v.bytes())
	if err != nil {
		return api.Secret{}, err
	}
	sec := &store.Secret{TenantID: tenantID, Name: spec.Name, Description: spec.Description, Kind: kind, Registry: registry,
		ValueBytes: v.Len(), KeyID: s.sealer.KeyID(), Nonce: nonce, Ciphertext: ct}
	claim, err := s.cfg.Quotas.Admit(ctx, tenantID, quota.Ask{Secrets: 1}, nil)
	if err != nil {
		return api.Secret{}, err
	}
	defer claim.Cancel()
	if err := claim.Commit(ctx, nil, func() error { return s.store.CreateSecret(ctx, sec) }); err != nil {
		return api.Secret{}, err
	}
	s.emit(ctx, sec, api.EventSecretCreated, "created")
	return metadata(sec), nil
}

// Replace seals v as the new value of the caller's tenant's secret name,
// and sets its description when description is not nil; its kind and
// registry stay. A missing secret is not found (code secret_not_found):
// Replace never creates one.
func (s *Service) Replace(ctx context.Context, name string, description *string, v Value) (api.Secret, error) {
	desc := ""
	if description != nil {
		desc = *description
	}
	if _, err := s.check(ctx, name, desc, v); err != nil {
		return api.Secret{}, err
	}
	sec, err := s.store.UpdateSecret(ctx, name, func(sec *store.Secret) error {
		nonce, ct, err := s.sealer.Seal(sec.TenantID, sec.Name, v.bytes())
		if err != nil {
			return err
		}
		sec.Nonce, sec.Ciphertext, sec.KeyID, sec.ValueBytes = nonce, ct, s.sealer.KeyID(), v.Len()
		if description != nil {
			sec.Description = *description
		}
		return nil
	})
	if err != nil {
		return api.Secret{}, err
	}
	s.emit(ctx, sec, api.EventSecretUpdated, "replaced")
	return metadata(sec), nil
}

// Get returns the metadata of the caller's tenant's secret name.
func (s *Service) Get(ctx context.Context, name string) (api.Secret, error) {
	if err := store.CheckSecretName(name); err != nil {
		return api.Secret{}, err
	}
	sec, err := s.store.GetSecret(ctx, name)
	if err != nil {
		return api.Secret{}, err
	}
	return metadata(sec), nil
}

// List returns the metadata of the caller's tenant's secrets, by name.
func (s *Service) List(ctx context.Context) (api.SecretList, error) {
	if _, err := store.NamedScope(ctx, "secrets"); err != nil {
		return api.SecretList{}, err
	}
	list, err := s.store.ListSecrets(ctx)
	if err != nil {
		return api.SecretList{}, err
	}
	out := api.SecretList{Secrets: make([]api.Secret, 0, len(list))}
	for i := range list {
		out.Secrets = append(out.Secrets, metadata(&list[i]))
	}
	return out, nil
}

// Delete deletes the caller's tenant's secret name.
func (s *Service) Delete(ctx context.Context, name string) error {
	p, ok := tenancy.From(ctx)
	if !ok {
		return errdefs.Forbidden("no_tenant", "secrets are kept per tenant: the call needs a principal")
	}
	if err := store.CheckSecretName(name); err != nil {
		return err
	}
	if err := s.store.DeleteSecret(ctx, name); err != nil {
		return err
	}
	s.emit(ctx, &store.Secret{TenantID: p.TenantID, Name: name}, api.EventSecretDeleted, "deleted")
	return nil
}

// Reveal returns the value of the caller's tenant's env secret name. It
// is for the control plane's own use toward destinations the operator
// configured, such as the provider gateway putting a key into an upstream
// request; no API route calls it, and the value must never reach a log,
// an event, an error or an answer. A registry secret is refused (code
// secret_registry_only): it goes to its registry alone. Give the caller a
// context carrying the principal of the tenant whose secret it needs.
func (s *Service) Reveal(ctx context.Context, name string) ([]byte, error) {
	sec, err := s.load(ctx, name)
	if err != nil {
		return nil, err
	}
	if sec.Kind != api.SecretKindEnv {
		return nil, registryOnly(sec)
	}
	return s.open(sec)
}

// RevealRegistry returns the value of the caller's tenant's registry
// secret name, to be sent as a password to registry (canonical,
// image.RefRegistry) and nowhere else. A secret of another kind is
// refused (code secret_not_registry), and so is one bound to another host
// (secret_registry_mismatch): the caller picks the registry, so only a
// value made for that very registry may go there.
func (s *Service) RevealRegistry(ctx context.Context, name, registry string) ([]byte, error) {
	sec, err := s.load(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := boundTo(sec, registry); err != nil {
		return nil, err
	}
	return s.open(sec)
}

// load reads the caller's tenant's secret name, sealed.
func (s *Service) load(ctx context.Context, name string) (*store.Secret, error) {
	if _, ok := tenancy.From(ctx); !ok {
		return nil, errdefs.Forbidden("no_tenant", "revealing a secret needs the principal of its tenant")
	}
	if err := store.CheckSecretName(name); err != nil {
		return nil, err
	}
	return s.store.GetSecret(ctx, name)
}

// open returns sec's value.
func (s *Service) open(sec *store.Secret) ([]byte, error) {
	b, err := s.sealer.Open(sec.KeyID, sec.TenantID, sec.Name, sec.Nonce, sec.Ciphertext)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "secret_unreadable", err,
			"secret %q cannot be read with the server's master key", sec.Name)
	}
	return b, nil
}

// check validates a write and returns the caller's tenant.
func (s *Service) check(ctx context.Context, name, description string, v Value) (string, error) {
	p, ok := tenancy.From(ctx)
	if !ok {
		return "", errdefs.Forbidden("no_tenant", "secrets are kept per tenant: the call needs a principal")
	}
	if err := store.CheckSecretName(name); err != nil {
		return "", err
	}
	if len(description) > api.MaxSecretDescription {
		return "", errdefs.Invalid("invalid_secret", "a secret's description must be at most %d bytes", api.MaxSecretDescription)
	}
	if v.Len() == 0 {
		return "", errdefs.Invalid("invalid_secret_value", "a secret needs a value: send it as a non-empty string in \"value\"")
	}
	if int64(v.Len()) > s.cfg.MaxValueBytes {
		return "", errdefs.New(errdefs.ErrTooLarge, "secret_too_large",
			"a secret's value may be at most %d bytes; this one is %d", s.cfg.MaxValueBytes, v.Len())
	}
	return p.TenantID, nil
}

// metadata is sec as the API shows it: its metadata, without its sealed
// value.
func metadata(sec *store.Secret) api.Secret {
	return api.Secret{
		ID:          sec.ID,
		TenantID:    sec.TenantID,
		Name:        sec.Name,
		Description: sec.Description,
		Kind:        sec.Kind,
		Registry:    sec.Registry,
		ValueBytes:  sec.ValueBytes,
		CreatedAt:   sec.CreatedAt,
		UpdatedAt:   sec.UpdatedAt,
	}
}

// emit records that sec was created, replaced or deleted, on a context
// that outlives ctx; a failure is logged and does not fail the call. The
// event names the secret and never holds its value.
func (s *Service) emit(ctx context.Context, sec *store.Secret, typ, verb string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	defer cancel()
	e := &events.Event{
		TenantID: sec.TenantID,
		Type:     typ,
		Message:  fmt.Sprintf("secret %q %s", sec.Name, verb),
		Data:     map[string]any{"name": sec.Name},
	}
	if err := s.events.AppendEvent(ctx, e); err != nil {
		s.log.Error("record event", logattr.Tenant(sec.TenantID), "secret.name", sec.Name, "event.type", typ, "err", err)
	}
}
