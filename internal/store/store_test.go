package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

func TestPageSize(t *testing.T) {
	for _, tt := range []struct{ in, want int }{
		{-5, DefaultLimit}, {0, DefaultLimit}, {1, 1}, {MaxLimit, MaxLimit}, {MaxLimit + 1, MaxLimit},
	} {
		if got := PageSize(tt.in); got != tt.want {
			t.Errorf("PageSize(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestTime(t *testing.T) {
	in := time.Date(2025, 1, 1, 1, 0, 0, 123456789, time.FixedZone("X", 3600)).Add(0)
	got := Time(in)
	if got.Location() != time.UTC || got.Nanosecond() != 123456000 || !got.Equal(in.Truncate(time.Microsecond)) {
		t.Errorf("Time(%v) = %v", in, got)
	}
	if TimePtr(nil) != nil {
		t.Error("TimePtr(nil) != nil")
	}
}

func TestScopeOf(t *testing.T) {
	bg := context.Background()
	member := tenancy.With(bg, tenancy.Principal{TenantID: "a", Role: api.RoleMember})
	admin := tenancy.With(bg, tenancy.Principal{TenantID: "a", Role: api.RoleAdmin})
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want Scope
	}{
		{"member", member, Scope{TenantID: "a"}},
		{"admin", admin, Scope{TenantID: "a", Admin: true}},
		{"system", tenancy.System(bg), Scope{All: true}},
		{"system with principal", tenancy.System(member), Scope{TenantID: "a", All: true}},
	} {
		got, err := ScopeOf(tt.ctx)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	_, err := ScopeOf(bg)
	if _, code, _ := errdefs.Classify(err); !errors.Is(err, errdefs.ErrForbidden) || code != "no_tenant" {
		t.Errorf("ScopeOf(background) = %v, want forbidden no_tenant", err)
	}
	// An empty tenant id is no principal.
	_, err = ScopeOf(tenancy.With(bg, tenancy.Principal{Role: api.RoleAdmin}))
	if !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("ScopeOf(principal without tenant) = %v, want forbidden", err)
	}
}

func TestCursor(t *testing.T) {
	id := "01jqz0000000000000000000ab"
	got, err := DecodeCursor(EncodeCursor(id))
	if err != nil || got != id {
		t.Errorf("DecodeCursor(EncodeCursor(%q)) = %q, %v", id, got, err)
	}
	for _, bad := range []string{"", "!!", EncodeCursor("")[:2], "aWQ"} {
		if _, err := DecodeCursor(bad); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("DecodeCursor(%q) = %v, want invalid", bad, err)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor("01jqz0000000000000000000ab"))
	f.Add("djE6")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := DecodeCursor(s)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("DecodeCursor(%q): error %v is not invalid", s, err)
			}
			return
		}
		if id == "" {
			t.Fatalf("DecodeCursor(%q) = empty id without error", s)
		}
		if again, err := DecodeCursor(EncodeCursor(id)); err != nil || again != id {
			t.Fatalf("round trip of %q: %q, %v", id, again, err)
		}
	})
}
