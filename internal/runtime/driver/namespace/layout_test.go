package namespace

import (
	"errors"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func TestResolveCwd(t *testing.T) {
	d := &Driver{tmpl: &template{ReadOnly: []string{"/usr"}}}
	for _, tc := range []struct {
		cwd, want string // want "" means refused
	}{
		{"", "/workspace"},
		{"app", "/workspace/app"},
		{"/srv/app/", "/srv/app"},
		{"/home/user/x", "/home/user/x"},
		{"../outside", ""},
		{"/tmp/x", ""},
		{"/proc", ""},
		{"/usr/local/app", ""},
		{"/.hutch/bin", ""},
		{"/", ""},
		{"a\x00b", ""},
	} {
		got, err := d.resolveCwd(tc.cwd)
		if tc.want == "" {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("resolveCwd(%q) = %q, %v; want invalid", tc.cwd, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolveCwd(%q) = %q, %v; want %q", tc.cwd, got, err, tc.want)
		}
	}
}
