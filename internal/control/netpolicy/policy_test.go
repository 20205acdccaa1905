package netpolicy

import (
	"errors"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		p  api.NetworkPolicy
		ok bool
	}{
		{api.NetworkPolicy{}, true},
		{api.NetworkPolicy{Egress: "none"}, true},
		{api.NetworkPolicy{Egress: "allowlist", Allow: []string{"registry.npmjs.org", "*.example.com:443", "10.0.0.0/8", "192.0.2.1"}}, true},
		{api.NetworkPolicy{Egress: "open"}, false},
		{api.NetworkPolicy{Egress: "public", Allow: []string{"x.com"}}, false},
		{api.NetworkPolicy{Egress: "allowlist", Allow: []string{"bad host"}}, false},
		{api.NetworkPolicy{Egress: "allowlist", Allow: []string{"x.com:0"}}, false},
		{api.NetworkPolicy{Egress: "allowlist", Allow: []string{"*."}}, false},
	} {
		_, err := Parse(tc.p)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errdefs.ErrInvalid)) {
			t.Errorf("Parse(%+v) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}
