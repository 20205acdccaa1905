// Package settings owns the lifecycle settings an admin changes while
// hutch runs (api.Settings, GET and PATCH /v1/settings). hutch serve's
// flags give their values; a PATCH keeps the keys it changes in the store,
// where each wins over its flag from then on, at this start and every
// later one. The sandbox service reads the settings live
// (sandbox.Service.ApplySettings), so a change reaches every sandbox,
// running ones included, without a restart; each change is a
// settings.changed event in the admin's tenant.
//
// The server's other settings (Config.ReadOnly, which the server builds
// from its own configuration) are shown beside them and only a restart
// with other flags changes them.
package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/store"
)

// eventTimeout bounds recording the event of a change once it is made.
const eventTimeout = 10 * time.Second

// Config is what the service is built from. Log may be nil; ReadOnly
// empty; the rest is required.
type Config struct {
	// Store keeps the settings a PATCH changed.
	Store store.Settings
	// Events records settings.changed (the server's events.Log, so
	// event streams see it at once).
	Events events.Appender
	// Flags are the settings hutch serve's flags give (config.Settings).
	Flags api.Settings
	// ReadOnly are the server's other settings; none may share a key
	// with a setting.
	ReadOnly []Fixed
	// Check says what is wrong with settings, as 400 invalid_setting
	// naming the key (sandbox.CheckSettings); Apply puts settings that
	// passed it in force (sandbox.Service.ApplySettings).
	Check func(api.Settings) error
	Apply func(api.Settings) error
	Log   *slog.Logger
}

// Fixed is one of the server's settings that only a restart changes:
// shown in GET /v1/settings (read_only), refused by a PATCH (403
// setting_protected).
type Fixed struct {
	Key   string // its name in read_only
	Flag  string // the hutch serve flags that set it; "" when none does
	Value any    // as JSON encodes it
}

// Service shows and changes the settings. It is safe for concurrent use
// and holds nothing to close.
type Service struct {
	store        store.Settings
	events       events.Appender
	check, apply func(api.Settings) error
	readOnly     map[string]Fixed
	log          *slog.Logger

	// mu serialises changes, from reading what is in force to applying
	// what replaces it, so two PATCHes never interleave; it guards cur.
	mu  sync.Mutex
	cur api.Settings // in force
}

// New puts in force the flags' settings with, over them, those the store
// keeps, logging each of those, and returns the service. ctx must be the
// system's (tenancy.System): it reads the store. A key in the store this
// hutch does not know is logged and ignored; stored values that do not
// fit the flags (a default timeout over the maximum) fail the start, since
// only other flags can mend it before the API serves.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Events == nil || cfg.Check == nil || cfg.Apply == nil {
		return nil, errors.New("settings: Store, Events, Check and Apply are required")
	}
	s := &Service{store: cfg.Store, events: cfg.Events, check: cfg.Check, apply: cfg.Apply,
		readOnly: make(map[string]Fixed, len(cfg.ReadOnly)), log: cfg.Log}
	if s.log == nil {
		s.log = slog.Default()
	}
	for _, f := range cfg.ReadOnly {
		if _, ok := kinds[f.Key]; ok {
			return nil, fmt.Errorf("settings: read-only %s is a setting", f.Key)
		}
		s.readOnly[f.Key] = f
	}
	stored, err := cfg.Store.Settings(ctx)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	flags := encode(cfg.Flags)
	over := map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(stored)) {
		if _, ok := kinds[k]; !ok {
			s.log.Warn("a setting kept in the store is unknown to this hutch: ignored", "setting", k, "value", string(stored[k]))
			continue
		}
		over[k] = stored[k]
		s.log.Info("a setting kept in the store overrides the flag", "setting", k, "value", string(stored[k]), "flag", string(flags[k]))
	}
	cur, err := overlay(cfg.Flags, over)
	if err == nil {
		err = s.check(cur)
	}
	if err != nil && len(over) > 0 {
		return nil, fmt.Errorf("settings: the values a PATCH /v1/settings kept in the store (%s) do not fit the flags: change the flags: %w",
			strings.Join(slices.Sorted(maps.Keys(over)), ", "), err)
	}
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := s.apply(cur); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	s.cur = cur
	return s, nil
}

// Get returns the settings in force and the read-only ones.
func (s *Service) Get() api.SettingsView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view()
}

// Patch changes the settings body names, a JSON object of keys and
// values, and returns what is in force then. A key that is not a setting
// is 400 unknown_setting, a read-only one 403 setting_protected, a value
// of the wrong JSON type or out of range (Check) 400 invalid_setting:
// then nothing changes. What changed is stored, applied and recorded as
// one settings.changed event in the caller's tenant, with each key's old
// and new value; a Patch that changes nothing writes and records nothing.
func (s *Service) Patch(ctx context.Context, body json.RawMessage) (api.SettingsView, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil || req == nil {
		return api.SettingsView{}, errdefs.Invalid("invalid_json", `the body must be a JSON object of the settings to change, e.g. {"max_timeout_s": 3600}`)
	}
	for _, k := range slices.Sorted(maps.Keys(req)) {
		if f, ok := s.readOnly[k]; ok {
			if f.Flag == "" {
				return api.SettingsView{}, errdefs.Forbidden("setting_protected", "%s is fixed: neither a flag nor a PATCH changes it", k)
			}
			return api.SettingsView{}, errdefs.Forbidden("setting_protected", "%s is fixed while hutch runs: restart hutch serve with %s to change it", k, f.Flag)
		}
		if _, ok := kinds[k]; !ok {
			return api.SettingsView{}, errdefs.Invalid("unknown_setting", "unknown setting %q: the settings are %s",
				shorten(k), strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur
	next, err := overlay(old, req)
	if err != nil {
		return api.SettingsView{}, err
	}
	if err := s.check(next); err != nil {
		return api.SettingsView{}, err
	}
	before, after := encode(old), encode(next)
	changed := map[string]json.RawMessage{}
	for k, v := range after {
		if !bytes.Equal(before[k], v) {
			changed[k] = v
		}
	}
	if len(changed) == 0 {
		return s.view(), nil
	}
	if err := s.store.PutSettings(ctx, changed); err != nil {
		return api.SettingsView{}, err
	}
	if err := s.apply(next); err != nil {
		return api.SettingsView{}, err
	}
	s.cur = next
	s.record(ctx, before, changed)
	return s.view(), nil
}

// view is what GET and PATCH answer; s.mu is held.
func (s *Service) view() api.SettingsView {
	ro := make(map[string]any, len(s.readOnly))
	for k, f := range s.readOnly {
		ro[k] = f.Value
	}
	return api.SettingsView{Settings: s.cur, ReadOnly: ro}
}

// record logs a change and records it as settings.changed in the caller's
// tenant, on a context that outlives ctx; a failure is logged and does
// not undo the change.
func (s *Service) record(ctx context.Context, before, changed map[string]json.RawMessage) {
	p, _ := tenancy.From(ctx)
	keys := slices.Sorted(maps.Keys(changed))
	data := make(map[string]any, len(keys))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		data[k] = map[string]any{"old": value(before[k]), "new": value(changed[k])}
		parts = append(parts, fmt.Sprintf("%s %s → %s", k, before[k], changed[k]))
	}
	msg := "settings changed: " + strings.Join(parts, ", ")
	s.log.Info("settings changed", logattr.Tenant(p.TenantID), logattr.Key(p.KeyID), "settings", strings.Join(parts, ", "))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	defer cancel()
	e := &events.Event{Type: api.EventSettingsChanged, Message: msg, Data: data}
	if err := s.events.AppendEvent(ctx, e); err != nil {
		s.log.Error("record event", logattr.Tenant(p.TenantID), "event.type", e.Type, "err", err)
	}
}

// kinds maps each setting's key, api.Settings' JSON names, to its Go type.
var kinds = func() map[string]reflect.Type {
	t := reflect.TypeFor[api.Settings]()
	m := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = t.Field(i).Type
	}
	return m
}()

// overlay returns base with the values of over, whose keys are settings.
// A value of the wrong JSON type, null included, is 400 invalid_setting
// naming its key.
func overlay(base api.Settings, over map[string]json.RawMessage) (api.Settings, error) {
	for _, k := range slices.Sorted(maps.Keys(over)) {
		if bytes.Equal(bytes.TrimSpace(over[k]), []byte("null")) {
			return base, errdefs.Invalid("invalid_setting", "%s must be %s, not null", k, kindOf(kinds[k]))
		}
	}
	b, err := json.Marshal(over)
	if err != nil {
		return base, errdefs.Wrap(errdefs.ErrInvalid, "invalid_setting", err, "a setting's value is not JSON")
	}
	next := base
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(b, &next); errors.As(err, &typeErr) {
		return base, errdefs.Invalid("invalid_setting", "%s must be %s, not %s", typeErr.Field, kindOf(typeErr.Type), article(typeErr.Value))
	} else if err != nil {
		return base, fmt.Errorf("settings: %w", err)
	}
	return next, nil
}

// kindOf names the JSON value a setting of type t takes, for a person.
func kindOf(t reflect.Type) string {
	if t.Kind() == reflect.String {
		return "a string"
	}
	return "a whole number"
}

// article puts "a" or "an" before the kind of JSON value the decoder
// found ("string", "number 1.5", "array"…).
func article(found string) string {
	if found != "" && strings.ContainsRune("aeiou", rune(found[0])) {
		return "an " + found
	}
	return "a " + found
}

// encode returns v's keys, each with its value as JSON.
func encode(v api.Settings) map[string]json.RawMessage {
	// Whole numbers and strings: neither step can fail.
	b, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return m
}

// value decodes one JSON value for an event's data.
func value(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v) // it came from encode
	return v
}

// shorten bounds a key a caller sent before an error message quotes it.
func shorten(k string) string {
	const most = 64
	if len(k) <= most {
		return k
	}
	return k[:most] + "…"
}
