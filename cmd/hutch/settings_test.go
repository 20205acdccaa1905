package main

import (
	"encoding/json"
	"testing"
)

// TestSettingValue: a value on the command line is sent as the JSON it
// is, a duration as seconds for a key in seconds, anything else as text.
func TestSettingValue(t *testing.T) {
	for _, tc := range []struct{ key, in, want string }{
		{"max_timeout_s", "3600", `3600`},
		{"max_timeout_s", "2h", `7200`},
		{"max_timeout_s", "90s", `90`},
		{"max_timeout_s", "1.5s", `"1.5s"`},
		{"on_idle", "stop", `"stop"`},
		{"on_idle", `"stop"`, `"stop"`},
		{"on_idle", "2h", `"2h"`},
		{"memory_low_pct", "20", `20`},
	} {
		b, err := json.Marshal(settingValue(tc.key, tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("settingValue(%q, %q) = %s, %v; want %s", tc.key, tc.in, b, err, tc.want)
		}
	}
}
