package api

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Secret names: 1 to MaxSecretName characters of A-Z, a-z, 0-9, '_', '.'
// and '-', the first not '.' or '-' (so a name is never "..", a hidden
// file's or a flag's). Names are unique within a tenant and cannot change:
// a value is bound to its name.
const MaxSecretName = 128

// MaxSecretDescription bounds a secret's description, in bytes.
const MaxSecretDescription = 1024

// Event types about a tenant's secrets. Each carries the secret's "name" in
// Data; no event ever carries a value.
const (
	EventSecretCreated = "secret.created"
	EventSecretUpdated = "secret.updated"
	EventSecretDeleted = "secret.deleted"
)

// Secret kinds: what a secret's value may be used for. A secret's kind,
// and a registry secret's host, are set when it is created and never
// change; a value is used only as its kind says.
const (
	// SecretKindEnv, the default, is a value the server uses on the
	// tenant's behalf toward a destination the operator configured: a
	// provider key the gateway adds to a sandbox's calls. It is never
	// sent to a registry.
	SecretKindEnv = "env"
	// SecretKindRegistry is a registry password, bound to one registry
	// host (Secret.Registry): a pull's password_secret must name one, the
	// pull's image must be on that host, and the value is sent to that
	// host and port alone (to Docker Hub's token service too, for
	// Docker Hub), never to a token realm or a redirect elsewhere. It
	// serves nothing else: the gateway refuses it.
	SecretKindRegistry = "registry"
)

// Redacted is what a secret value shows instead of itself.
const Redacted = "[redacted]"

// SecretValue is a secret's value on its way to the server. It travels as
// a JSON string (it is the point of the request body), and every other
// form of it shows Redacted: fmt's verbs (%v, %+v, %#v, %s, %q, %x…) and
// log/slog. Logging a request that holds one therefore does not leak it.
// The server never sends a value back.
type SecretValue string

// String returns Redacted.
func (SecretValue) String() string { return Redacted }

// GoString returns Redacted, quoted.
func (SecretValue) GoString() string { return `"` + Redacted + `"` }

// Format prints Redacted whatever the verb.
func (SecretValue) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// LogValue returns Redacted.
func (SecretValue) LogValue() slog.Value { return slog.StringValue(Redacted) }

// CreateSecretRequest is the body of POST /v1/secrets.
type CreateSecretRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Kind is SecretKindEnv (the default when empty) or
	// SecretKindRegistry.
	Kind string `json:"kind,omitempty"`
	// Registry is the host a registry secret is bound to, "host" or
	// "host:port" ("docker.io" for Docker Hub); required with
	// SecretKindRegistry and refused with any other kind.
	Registry string      `json:"registry,omitempty"`
	Value    SecretValue `json:"value"`
}

// LogValue shows the request without its value.
func (r CreateSecretRequest) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", r.Name), slog.String("description", r.Description),
		slog.String("kind", r.Kind), slog.String("registry", r.Registry), slog.String("value", Redacted))
}

// ReplaceSecretRequest is the body of PUT /v1/secrets/{name}: a new value
// for an existing secret and, when set, a new description. Its kind and
// registry stay as they were created.
type ReplaceSecretRequest struct {
	Value       SecretValue `json:"value"`
	Description *string     `json:"description,omitempty"`
}

// LogValue shows the request without its value.
func (r ReplaceSecretRequest) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("value", Redacted)}
	if r.Description != nil {
		attrs = append(attrs, slog.String("description", *r.Description))
	}
	return slog.GroupValue(attrs...)
}

// Secret is a secret's metadata. Values are write-only: no answer of the
// API holds one.
type Secret struct {
	ID          string    `json:"id"`
	TenantID    string    `json:"tenant_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Kind        string    `json:"kind"`               // SecretKindEnv or SecretKindRegistry
	Registry    string    `json:"registry,omitempty"` // a registry secret's host, canonical: "index.docker.io" for "docker.io"
	ValueBytes  int       `json:"value_bytes"`        // the value's length
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"` // when the value or description last changed
}

// SecretList is the answer of GET /v1/secrets, by name.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}
