package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
)

const settingsUsage = "hutch settings [--json] | hutch settings set KEY=VALUE…"

// runSettings is `hutch settings` (show) and `hutch settings set`.
func runSettings(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "set" {
		return settingsSet(ctx, e, args[1:])
	}
	fs := newFlags(e, "settings", settingsUsage+"   (admin)")
	asJSON := fs.Bool("json", false, "print the settings as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "unknown settings command %q: use hutch settings, or hutch settings set KEY=VALUE…", pos[0])
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	v, err := c.Settings(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, v)
	}
	return printSettings(e, v, true)
}

// settingsSet is `hutch settings set max_timeout_s=3600 on_idle=stop …`:
// the settings named change, at once and for every sandbox; the others
// stay as they are.
func settingsSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "settings set", "hutch settings set [--json] KEY=VALUE…   (admin; a duration such as 90s, 30m or 2h for a key ending in _s)")
	asJSON := fs.Bool("json", false, "print the settings as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "name at least one setting, e.g. hutch settings set max_timeout_s=2h")
	}
	changes := map[string]any{}
	for _, kv := range pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef(fs, "%q is not KEY=VALUE", kv)
		}
		changes[k] = settingValue(k, v)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	out, err := c.PatchSettings(ctx, changes)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, out)
	}
	return printSettings(e, out, false)
}

// settingValue is what v on the command line means for key: a JSON
// value as written (3600, true, "stop"), else, for a key in seconds (_s),
// a duration (2h) as seconds, else the text itself. The server says
// whether it fits the key.
func settingValue(key, v string) any {
	var j any
	if json.Unmarshal([]byte(v), &j) == nil {
		return json.RawMessage(v)
	}
	if d, err := time.ParseDuration(v); err == nil && strings.HasSuffix(key, "_s") && d%time.Second == 0 {
		return int64(d / time.Second)
	}
	return v
}

// printSettings prints the settings in force, in api.Settings' order,
// then, with readOnly, the read-only ones by name.
func printSettings(e *env, v *api.SettingsView, readOnly bool) error {
	tw := newTable(e.stdout)
	row(tw, "SETTING", "VALUE")
	rv := reflect.ValueOf(v.Settings)
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		row(tw, name, fmt.Sprint(rv.Field(i).Interface()))
	}
	if !readOnly {
		return tw.Flush()
	}
	row(tw, "", "")
	row(tw, "READ-ONLY (a restart changes them)", "VALUE")
	for _, k := range slices.Sorted(maps.Keys(v.ReadOnly)) {
		if s, ok := v.ReadOnly[k].(string); ok {
			row(tw, k, s)
			continue
		}
		b, err := json.Marshal(v.ReadOnly[k])
		if err != nil {
			return err
		}
		row(tw, k, string(b))
	}
	return tw.Flush()
}
