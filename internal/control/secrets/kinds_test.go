package secrets

import (
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// TestKinds: a registry secret is bound to its host in canonical form,
// opens only for that registry and never as an env secret; an env secret
// never opens for a registry; a replace keeps the kind and the host.
func TestKinds(t *testing.T) {
	svc, st, _ := newService(t, Config{})
	ctx := newTenant(t, st, "a")
	env, err := svc.Create(ctx, Spec{Name: "OPENAI_API_KEY"}, NewValue([]byte("sk-provider")))
	if err != nil {
		t.Fatal(err)
	}
	if env.Kind != api.SecretKindEnv || env.Registry != "" {
		t.Errorf("a secret made without a kind: %+v; want env, bound to nothing", env)
	}
	for in, want := range map[string]string{"docker.io": "index.docker.io", "GHCR.io:443": "ghcr.io", "127.0.0.1:5000": "127.0.0.1:5000"} {
		name := "REG_" + strings.NewReplacer(".", "_", ":", "_").Replace(in)
		sec, err := svc.Create(ctx, Spec{Name: name, Kind: api.SecretKindRegistry, Registry: in}, NewValue([]byte("pw-"+want)))
		if err != nil {
			t.Fatalf("Create bound to %s: %v", in, err)
		}
		if sec.Kind != api.SecretKindRegistry || sec.Registry != want {
			t.Errorf("bound to %s: %+v; want the registry %s", in, sec, want)
		}
		if got, err := svc.RevealRegistry(ctx, name, want); err != nil || string(got) != "pw-"+want {
			t.Errorf("RevealRegistry for %s = %q, %v", want, got, err)
		}
		_, err = svc.RevealRegistry(ctx, name, "evil.example")
		wantCode(t, "a registry secret for another registry", err, errdefs.ErrInvalid, "secret_registry_mismatch")
		_, err = svc.Reveal(ctx, name)
		wantCode(t, "a registry secret as an env one", err, errdefs.ErrInvalid, "secret_registry_only")
	}
	_, err = svc.RevealRegistry(ctx, "OPENAI_API_KEY", "ghcr.io")
	wantCode(t, "an env secret for a registry", err, errdefs.ErrInvalid, "secret_not_registry")

	for _, bad := range []struct {
		spec Spec
		code string
	}{
		{Spec{Kind: api.SecretKindRegistry}, "invalid_secret_kind"},
		{Spec{Registry: "ghcr.io"}, "invalid_secret_kind"},
		{Spec{Kind: api.SecretKindEnv, Registry: "ghcr.io"}, "invalid_secret_kind"},
		{Spec{Kind: "ssh"}, "invalid_secret_kind"},
		{Spec{Kind: api.SecretKindRegistry, Registry: "https://ghcr.io/sk-pasted-here"}, "invalid_secret_registry"},
		{Spec{Kind: api.SecretKindRegistry, Registry: "ghcr.io/team"}, "invalid_secret_registry"},
		{Spec{Kind: api.SecretKindRegistry, Registry: "u:sk-pasted-here@ghcr.io"}, "invalid_secret_registry"},
	} {
		bad.spec.Name = "BAD"
		_, err := svc.Create(ctx, bad.spec, NewValue([]byte("v")))
		wantCode(t, "kind "+bad.spec.Kind+" registry "+bad.spec.Registry, err, errdefs.ErrInvalid, bad.code)
		if err != nil && strings.Contains(err.Error(), "sk-pasted-here") {
			t.Errorf("the error echoes the request: %v", err)
		}
	}

	rep, err := svc.Replace(ctx, "REG_docker_io", nil, NewValue([]byte("rotated")))
	if err != nil || rep.Kind != api.SecretKindRegistry || rep.Registry != "index.docker.io" {
		t.Errorf("Replace of a registry secret = %+v, %v; want it still bound to index.docker.io", rep, err)
	}
	if got, err := svc.RevealRegistry(ctx, "REG_docker_io", "index.docker.io"); err != nil || string(got) != "rotated" {
		t.Errorf("RevealRegistry after Replace = %q, %v", got, err)
	}
}
