package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// testSettings: settings are server-wide: an admin of any tenant and the
// system read and write the same ones, a member or reader neither; a
// write replaces only the keys it names, all or none of them; values
// come back as written.
func testSettings(t *testing.T, s store.Store) {
	a, member := newTenant(t, s, "a")
	adminA, adminB := as(a.ID, api.RoleAdmin), as(ids.New(), api.RoleAdmin)
	raw := func(v string) json.RawMessage { return json.RawMessage(v) }

	got, err := s.Settings(system())
	if err != nil || len(got) != 0 {
		t.Fatalf("Settings of a new store = %v, %v; want none", got, err)
	}
	if err := s.PutSettings(adminA, map[string]json.RawMessage{"max_timeout_s": raw(`60`), "on_idle": raw(`"stop"`)}); err != nil {
		t.Fatalf("admin writes settings: %v", err)
	}
	if err := s.PutSettings(system(), map[string]json.RawMessage{"max_timeout_s": raw(`120`)}); err != nil {
		t.Fatalf("system writes a setting: %v", err)
	}
	want := map[string]json.RawMessage{"max_timeout_s": raw(`120`), "on_idle": raw(`"stop"`)}
	for name, ctx := range map[string]context.Context{"system": system(), "admin of a": adminA, "admin of another tenant": adminB} {
		got, err := s.Settings(ctx)
		if err != nil {
			t.Fatalf("%s reads settings: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s reads settings (-want +got):\n%s", name, diff)
		}
	}

	for name, ctx := range map[string]context.Context{"member": member, "reader": as(a.ID, api.RoleReader)} {
		_, err := s.Settings(ctx)
		wantErr(t, name+" reads settings", err, errdefs.ErrForbidden, "admin_required")
		wantErr(t, name+" writes settings", s.PutSettings(ctx, map[string]json.RawMessage{"max_timeout_s": raw(`1`)}), errdefs.ErrForbidden, "admin_required")
	}
	_, err = s.Settings(context.Background())
	wantErr(t, "Settings without principal", err, errdefs.ErrForbidden, "no_tenant")

	// A bad key or value refuses the whole write.
	for name, changes := range map[string]map[string]json.RawMessage{
		"nothing":    {},
		"empty key":  {"": raw(`1`), "min_idle_s": raw(`1`)},
		"long key":   {strings.Repeat("k", store.MaxSettingKey+1): raw(`1`)},
		"not JSON":   {"min_idle_s": raw(`1`), "on_idle": raw(`stop`)},
		"two values": {"on_idle": raw(`1 2`)},
		"huge value": {"on_idle": raw(`"` + strings.Repeat("x", store.MaxSettingValue) + `"`)},
	} {
		wantErr(t, "write of "+name, s.PutSettings(adminA, changes), errdefs.ErrInvalid, "invalid_setting")
	}
	if got, err := s.Settings(system()); err != nil || !cmp.Equal(want, got) {
		t.Errorf("after refused writes, Settings = %s, %v; want %s", got, err, want)
	}

	// Concurrent writes of different keys all land.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			k := "key_" + string(rune('a'+i))
			if err := s.PutSettings(system(), map[string]json.RawMessage{k: raw(`true`)}); err != nil {
				t.Errorf("concurrent write of %s: %v", k, err)
			}
		})
	}
	wg.Wait()
	if got, err := s.Settings(system()); err != nil || len(got) != len(want)+8 {
		t.Errorf("after 8 concurrent writes, Settings = %s, %v; want %d keys", got, err, len(want)+8)
	}
}
