package sandbox

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// What the store keeps of a sandbox that is a secret of its tenant: its
// env values and its agent's token. They are sealed like secret values
// (AES-256-GCM under the master key, bound to the tenant and to what the
// value is), so the database alone tells neither.

// Sealer is internal/control/secrets' Sealer as the service uses it.
type Sealer interface {
	KeyID() string
	Seal(tenantID, name string, plaintext []byte) (nonce, ciphertext []byte, err error)
	Open(keyID, tenantID, name string, nonce, ciphertext []byte) ([]byte, error)
}

// sealedPrefix starts a sealed value: "hutch-sealed:v1:<key id>:<nonce>:<ciphertext>".
const sealedPrefix = "hutch-sealed:v1:"

// seals seals and opens what the store keeps of sandboxes, under its
// Sealer; without one (tests) values are kept in clear.
type seals struct {
	sealer Sealer
}

func (s seals) seal(tenantID, name, v string) (string, error) {
	if s.sealer == nil {
		return v, nil
	}
	nonce, ct, err := s.sealer.Seal(tenantID, name, []byte(v))
	if err != nil {
		return "", err
	}
	enc := base64.RawStdEncoding
	return sealedPrefix + s.sealer.KeyID() + ":" + enc.EncodeToString(nonce) + ":" + enc.EncodeToString(ct), nil
}

// unseal opens what seal made; a value stored before sealing existed is
// returned as it is.
func (s seals) unseal(tenantID, name, v string) (string, error) {
	rest, ok := strings.CutPrefix(v, sealedPrefix)
	if !ok {
		return v, nil
	}
	if s.sealer == nil {
		return "", fmt.Errorf("%s is sealed, and this service has no key", name)
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("%s: malformed sealed value", name)
	}
	enc := base64.RawStdEncoding
	nonce, err1 := enc.DecodeString(parts[1])
	ct, err2 := enc.DecodeString(parts[2])
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("%s: malformed sealed value", name)
	}
	b, err := s.sealer.Open(parts[0], tenantID, name, nonce, ct)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", name, err)
	}
	return string(b), nil
}

// env seals each value of a sandbox's env for the store.
func (s seals) env(rec *store.Sandbox, env map[string]string) (map[string]string, error) {
	if len(env) == 0 {
		return env, nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		sv, err := s.seal(rec.TenantID, "sandbox/"+rec.ID+"/env/"+k, v)
		if err != nil {
			return nil, fmt.Errorf("seal the env of sandbox %s: %w", rec.ID, err)
		}
		out[k] = sv
	}
	return out, nil
}

// openEnv is a sandbox's env as its create gave it: env undone.
func (s seals) openEnv(rec *store.Sandbox) (map[string]string, error) {
	if len(rec.Env) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(rec.Env))
	for k, v := range rec.Env {
		pv, err := s.unseal(rec.TenantID, "sandbox/"+rec.ID+"/env/"+k, v)
		if err != nil {
			return nil, fmt.Errorf("open the env of sandbox %s: %w", rec.ID, err)
		}
		out[k] = pv
	}
	return out, nil
}

// encodeHandle is h as the store keeps it: its token sealed.
func (s seals) encodeHandle(rec *store.Sandbox, h driver.Handle) ([]byte, error) {
	tok, err := s.seal(rec.TenantID, "sandbox/"+rec.ID+"/token", h.Token)
	if err != nil {
		return nil, fmt.Errorf("seal the token of sandbox %s: %w", rec.ID, err)
	}
	h.Token = tok
	return encodeHandle(h)
}

// decodeHandle is the record's handle with its token opened.
func (s seals) decodeHandle(rec *store.Sandbox) (driver.Handle, error) {
	h, err := decodeHandle(rec.Handle)
	if err != nil {
		return h, err
	}
	if h.Token, err = s.unseal(rec.TenantID, "sandbox/"+rec.ID+"/token", h.Token); err != nil {
		return h, err
	}
	return h, nil
}
