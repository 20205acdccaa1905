package apps

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// sealName binds a sealed config value to its app and key; ':' never
// appears in a secret's name, so no secret's sealed value opens as one.
func sealName(appID, key string) string { return "app:" + appID + ":" + key }

// checkAccess validates an access policy; "" is control_plane_only.
func checkAccess(access string) (string, error) {
	switch access {
	case "":
		return api.AccessControlPlane, nil
	case api.AccessControlPlane, api.AccessRuntime, api.AccessAgent, api.AccessBoth:
		return access, nil
	}
	return "", errdefs.Invalid("invalid_access", "access %q is not %s (the default: nowhere in a sandbox), %s (the app's processes), %s (task commands) or %s",
		access, api.AccessControlPlane, api.AccessRuntime, api.AccessAgent, api.AccessBoth)
}

// delivered reports whether an entry with access goes where want says.
func delivered(access, want string) bool {
	return access == want || access == api.AccessBoth
}

// SetConfig creates or changes one config entry: create names the key in
// req; a change (key from the path) keeps what req leaves out. A
// sensitive value is sealed and never shown again; a value once sensitive
// stays so. The app's running processes get the change at once when the
// entry is delivered to them (before or after).
func (s *Service) SetConfig(ctx context.Context, appID, key string, req api.SetConfigRequest, create bool) (api.ConfigEntry, error) {
	a, err := s.get(ctx, appID)
	if err != nil {
		return api.ConfigEntry{}, err
	}
	if create {
		key = req.Key
	}
	if err := store.CheckConfigKey(key); err != nil {
		return api.ConfigEntry{}, err
	}
	cur, err := s.configEntry(ctx, appID, key)
	if err != nil && !(create && errdefs.HasCode(err, "config_not_found")) {
		return api.ConfigEntry{}, err
	}
	if create && cur != nil {
		return api.ConfigEntry{}, errdefs.Conflict("config_exists", "config key %q exists; change it with PATCH /v1/apps/%s/config/%s", key, appID, key)
	}
	c := store.AppConfig{AppID: appID, Key: key, Access: api.AccessControlPlane}
	if cur != nil {
		c = *cur
	}
	prevAccess := c.Access
	if req.Access != "" {
		if c.Access, err = checkAccess(req.Access); err != nil {
			return api.ConfigEntry{}, err
		}
	}
	if req.Sensitive != nil {
		if c.Sensitive && !*req.Sensitive {
			return api.ConfigEntry{}, errdefs.Invalid("config_sensitive", "config key %q is sensitive: a sensitive value stays so (delete the key to start again)", key)
		}
		c.Sensitive = *req.Sensitive
	}
	switch {
	case req.Value != nil:
		if len(*req.Value) > api.MaxConfigValue {
			return api.ConfigEntry{}, errdefs.Invalid("invalid_config_value", "a config value is at most %d bytes", api.MaxConfigValue)
		}
		if err := s.setValue(&c, a.TenantID, *req.Value); err != nil {
			return api.ConfigEntry{}, err
		}
	case cur == nil:
		return api.ConfigEntry{}, errdefs.Invalid("invalid_config_value", "a new config key needs a value")
	case c.Sensitive && !cur.Sensitive:
		// Made sensitive without a new value: seal the one it has.
		if err := s.setValue(&c, a.TenantID, cur.Value); err != nil {
			return api.ConfigEntry{}, err
		}
	}
	if err := s.apps.PutAppConfig(ctx, &c); err != nil {
		return api.ConfigEntry{}, err
	}
	s.emit(a, api.EventConfigUpdated, fmt.Sprintf("config %s set", key), map[string]any{"key": key, "access": c.Access, "sensitive": c.Sensitive})
	if delivered(c.Access, api.AccessRuntime) || delivered(prevAccess, api.AccessRuntime) {
		s.resupervise(ctx, a)
	}
	return configView(c), nil
}

// setValue puts v in c: sealed when c is sensitive, as it is otherwise.
func (s *Service) setValue(c *store.AppConfig, tenantID, v string) error {
	if !c.Sensitive {
		c.Value, c.KeyID, c.Nonce, c.Ciphertext = v, "", nil, nil
		return nil
	}
	nonce, ct, err := s.cfg.Sealer.Seal(tenantID, sealName(c.AppID, c.Key), []byte(v))
	if err != nil {
		return err
	}
	c.Value, c.KeyID, c.Nonce, c.Ciphertext = "", s.cfg.Sealer.KeyID(), nonce, ct
	return nil
}

// configEntry reads one entry.
func (s *Service) configEntry(ctx context.Context, appID, key string) (*store.AppConfig, error) {
	all, err := s.apps.ListAppConfig(ctx, appID)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Key == key {
			return &all[i], nil
		}
	}
	return nil, store.ConfigNotFound(key)
}

// ListConfig lists an app's config; sensitive values are not shown.
func (s *Service) ListConfig(ctx context.Context, appID string) (api.ConfigList, error) {
	all, err := s.apps.ListAppConfig(ctx, appID)
	if err != nil {
		return api.ConfigList{}, err
	}
	out := api.ConfigList{Config: make([]api.ConfigEntry, 0, len(all))}
	for _, c := range all {
		out.Config = append(out.Config, configView(c))
	}
	return out, nil
}

// DeleteConfig deletes one entry.
func (s *Service) DeleteConfig(ctx context.Context, appID, key string) error {
	a, err := s.get(ctx, appID)
	if err != nil {
		return err
	}
	cur, err := s.configEntry(ctx, appID, key)
	if err != nil {
		return err
	}
	if err := s.apps.DeleteAppConfig(ctx, appID, key); err != nil {
		return err
	}
	s.emit(a, api.EventConfigDeleted, fmt.Sprintf("config %s deleted", key), map[string]any{"key": key})
	if delivered(cur.Access, api.AccessRuntime) {
		s.resupervise(ctx, a)
	}
	return nil
}

func configView(c store.AppConfig) api.ConfigEntry {
	e := api.ConfigEntry{Key: c.Key, Sensitive: c.Sensitive, Access: c.Access, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if !c.Sensitive {
		e.Value = c.Value
	}
	return e
}

// configEnv is the config delivered to want (api.AccessRuntime or
// api.AccessAgent), sensitive values opened, as environment variables.
func (s *Service) configEnv(ctx context.Context, a *store.App, want string) (map[string]string, error) {
	all, err := s.apps.ListAppConfig(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, c := range all {
		if !delivered(c.Access, want) {
			continue
		}
		if !c.Sensitive {
			env[c.Key] = c.Value
			continue
		}
		v, err := s.cfg.Sealer.Open(c.KeyID, a.TenantID, sealName(a.ID, c.Key), c.Nonce, c.Ciphertext)
		if err != nil {
			return nil, fmt.Errorf("app %s: config %s: %w", a.Name, c.Key, err)
		}
		env[c.Key] = string(v)
	}
	return env, nil
}
