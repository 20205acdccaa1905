package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newSettingsCmd is `hutch settings` (show) and `hutch settings set`.
func newSettingsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "settings [set KEY=VALUE…]",
		Short: "Show the lifecycle settings; change them live (admin)",
		Args:  groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown settings command %q: use hutch settings, or hutch settings set KEY=VALUE…", args[0])
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			v, err := c.Settings(cmd.Context())
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, v)
			}
			return printSettings(e, v, true)
		},
	}
	cmd.AddCommand(newSettingsSetCmd(e))
	return cmd
}

// newSettingsSetCmd is `hutch settings set max_timeout_s=3600 on_idle=stop
// …`: the settings named change, at once and for every sandbox; the
// others stay as they are.
func newSettingsSetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "set KEY=VALUE…",
		Short: "Change settings (admin; a duration such as 90s, 30m or 2h for a key ending in _s)",
		Args:  nArgs(1, -1, "name at least one setting, e.g. hutch settings set max_timeout_s=2h"),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes := map[string]any{}
			for _, kv := range args {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("%q is not KEY=VALUE", kv)
				}
				changes[k] = settingValue(k, v)
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			out, err := c.PatchSettings(cmd.Context(), changes)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, out)
			}
			return printSettings(e, out, false)
		},
	}
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
