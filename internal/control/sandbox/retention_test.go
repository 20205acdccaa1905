package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// TestRunTrimsEvents: Run's first tick trims the event log to the
// retention settings: events past the retention go, then all but the
// tenant's newest EventMaxPerTenant.
func TestRunTrimsEvents(t *testing.T) {
	const keep = 5
	f := newLiveFixture(t, func(c *Config) { c.EventRetention, c.EventMaxPerTenant = time.Hour, keep })
	sb := f.create(t)
	old := store.Event{SandboxID: sb.ID, Type: api.EventProcessStarted, Message: "long ago", CreatedAt: time.Now().Add(-2 * time.Hour)}
	if err := f.st.AppendEvent(f.ctx, &old); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 2 * keep {
		e := store.Event{SandboxID: sb.ID, Type: api.EventProcessStarted, Message: "now"}
		if err := f.st.AppendEvent(f.ctx, &e); err != nil {
			t.Fatal(err)
		}
		if i >= keep {
			want = append(want, e.ID)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); f.svc.Run(ctx, 10*time.Millisecond, time.Hour) }()
	var got []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evs := allEvents(t, f.st, f.ctx, sb.ID)
		got = got[:0]
		for _, e := range evs {
			got = append(got, e.ID)
		}
		if len(got) <= keep {
			break
		}
	}
	cancel()
	<-ran
	if !slices.Equal(got, want) {
		t.Fatalf("events after Run's trim: %v; want the newest %d, %v", got, keep, want)
	}
}
