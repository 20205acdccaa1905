package secrets

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/store"
)

// A secret's kind is what its value may be used for, and a registry
// secret's host where it may be sent. Both are chosen by whoever creates
// the secret and never change (Replace keeps them); the uses check them
// before a value is opened. The registry host is kept in the canonical
// form image.RefRegistry gives a pull's reference, so the two compare as
// strings.

// checkKind validates a new secret's kind and registry, and returns them
// as stored: the kind defaulted, the host canonical.
func checkKind(kind, registry string) (string, string, error) {
	if kind == "" {
		kind = api.SecretKindEnv
	}
	if err := store.CheckSecretKind(kind, registry); err != nil {
		return "", "", err
	}
	if kind != api.SecretKindRegistry {
		return kind, "", nil
	}
	// The message does not quote the field: no error echoes a secret's
	// request body, where a value may have been pasted in the wrong place.
	host, err := image.RegistryHost(registry)
	if err != nil {
		return "", "", errdefs.Invalid("invalid_secret_registry",
			"a registry secret's registry must be the host it is bound to, as host or host:port (such as ghcr.io, docker.io or registry.example.com:5000), with no scheme or path")
	}
	return kind, host, nil
}

// boundTo refuses sec as a password for registry (canonical) unless it is
// a registry secret bound to that host.
func boundTo(sec *store.Secret, registry string) error {
	if sec.Kind != api.SecretKindRegistry {
		return errdefs.Invalid("secret_not_registry",
			"secret %q is not a registry secret: a pull sends its password to the image's registry, so it takes only a secret made for that registry (kind %q with its host: hutch secret set NAME --registry HOST)",
			sec.Name, api.SecretKindRegistry)
	}
	if sec.Registry != registry {
		return errdefs.Invalid("secret_registry_mismatch",
			"secret %q is bound to the registry %s; the image is on %s, which is never sent it", sec.Name, sec.Registry, registry)
	}
	return nil
}

// registryOnly is the refusal of a registry secret for any other use.
func registryOnly(sec *store.Secret) error {
	return errdefs.Invalid("secret_registry_only",
		"secret %q is a registry secret, bound to %s: its value is sent to that registry alone, as a pull's password", sec.Name, sec.Registry)
}
