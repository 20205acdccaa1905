package store

import (
	"context"
	"encoding/json"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Settings keeps the settings, which are server-wide, not a tenant's:
// the values an admin changed through PATCH /v1/settings, by key
// (api.Settings' JSON names), each as JSON. internal/control/settings
// says which keys exist and what they hold; the store keeps any key and
// any JSON value. Admin or system only.
type Settings interface {
	// Settings returns every stored setting by key, each as the JSON
	// written; an empty map when none is.
	Settings(ctx context.Context) (map[string]json.RawMessage, error)
	// PutSettings writes changes (CheckSettingChanges), each key's value
	// replacing the one stored, all in one transaction.
	PutSettings(ctx context.Context, changes map[string]json.RawMessage) error
}

// MaxSettingKey and MaxSettingValue bound one stored setting.
const (
	MaxSettingKey   = 64
	MaxSettingValue = 4 << 10 // bytes of JSON
)

// CheckSettingChanges validates what PutSettings is asked to write: at
// least one key, each 1-MaxSettingKey bytes, each value one JSON value of
// at most MaxSettingValue bytes.
func CheckSettingChanges(changes map[string]json.RawMessage) error {
	if len(changes) == 0 {
		return errdefs.Invalid("invalid_setting", "no setting to write")
	}
	for k, v := range changes {
		if k == "" || len(k) > MaxSettingKey {
			return errdefs.Invalid("invalid_setting", "a setting's key must be 1-%d bytes", MaxSettingKey)
		}
		if len(v) > MaxSettingValue || !json.Valid(v) {
			return errdefs.Invalid("invalid_setting", "setting %s must be one JSON value of at most %d bytes", k, MaxSettingValue)
		}
	}
	return nil
}

// CheckSettingsScope refuses the settings to anyone but an admin
// principal or the system: they are the operator's, and touch every
// tenant.
func CheckSettingsScope(ctx context.Context) error {
	return CheckAdminScope(ctx)
}
