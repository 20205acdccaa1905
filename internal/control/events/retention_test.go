package events

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// TestRunTrims: Run trims at once, before its first tick: the events past
// the retention go, then all but the tenant's newest MaxPerTenant; it
// returns when its context ends.
func TestRunTrims(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn := store.Tenant{ID: ids.New(), Name: "t"}
	if err := st.CreateTenant(tenancy.System(context.Background()), tn); err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, Role: api.RoleMember})
	const keep = 5
	l := New(st, Config{Retention: time.Hour, MaxPerTenant: keep})
	if err := st.AppendEvent(ctx, &store.Event{Type: api.EventSecretCreated, Message: "long ago", CreatedAt: time.Now().Add(-2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 2 * keep {
		e := Event{Type: api.EventSecretCreated, Message: "now"}
		if err := l.AppendEvent(ctx, &e); err != nil {
			t.Fatal(err)
		}
		if i >= keep {
			want = append(want, e.ID)
		}
	}

	rctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); l.run(rctx, time.Hour) }()
	var got []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		page, err := l.List(ctx, Query{Limit: store.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range page.Events {
			got = append(got, e.ID)
		}
		if len(got) <= keep {
			break
		}
	}
	cancel()
	<-ran
	if !slices.Equal(got, want) {
		t.Fatalf("events after Run's first trim: %v; want the newest %d, %v", got, keep, want)
	}
}
