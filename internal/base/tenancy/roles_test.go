package tenancy

import (
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func TestHolds(t *testing.T) {
	for _, tt := range []struct {
		role, least string
		want        bool
	}{
		{api.RoleAdmin, api.RoleAdmin, true},
		{api.RoleAdmin, api.RoleMember, true},
		{api.RoleAdmin, api.RoleReader, true},
		{api.RoleMember, api.RoleAdmin, false},
		{api.RoleMember, api.RoleMember, true},
		{api.RoleMember, api.RoleReader, true},
		{api.RoleReader, api.RoleMember, false},
		{api.RoleReader, api.RoleReader, true},
		{"", api.RoleReader, false},
		{"root", api.RoleReader, false},
		{api.RoleAdmin, "root", false},
	} {
		if got := Holds(tt.role, tt.least); got != tt.want {
			t.Errorf("Holds(%q, %q) = %v, want %v", tt.role, tt.least, got, tt.want)
		}
	}
	for role, code := range map[string]string{api.RoleAdmin: "admin_required", api.RoleMember: "member_required"} {
		class, got, _ := errdefs.Classify(RoleRequired(role))
		if class != errdefs.ErrForbidden || got != code {
			t.Errorf("RoleRequired(%s) = %v %q, want forbidden %q", role, class, got, code)
		}
	}
}

// TestMay: a key may what its role holds, and a suspended tenant's key
// only what a reader may (403 tenant_suspended beyond it).
func TestMay(t *testing.T) {
	for _, tt := range []struct {
		p     Principal
		least string
		code  string // "" when allowed
	}{
		{Principal{Role: api.RoleMember}, api.RoleMember, ""},
		{Principal{Role: api.RoleReader}, api.RoleMember, "member_required"},
		{Principal{Role: api.RoleAdmin, Suspended: true}, api.RoleReader, ""},
		{Principal{Role: api.RoleAdmin, Suspended: true}, api.RoleMember, "tenant_suspended"},
		{Principal{Role: api.RoleMember, Suspended: true}, api.RoleAdmin, "admin_required"},
		{Principal{Role: api.RoleReader, Suspended: true}, api.RoleMember, "member_required"},
	} {
		err := tt.p.May(tt.least)
		_, code, _ := errdefs.Classify(err)
		if (err == nil) != (tt.code == "") || err != nil && code != tt.code {
			t.Errorf("%+v May(%s) = %v, want %q", tt.p, tt.least, err, tt.code)
		}
	}
}
