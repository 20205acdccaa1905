package watch

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"

	"github.com/google/go-cmp/cmp"
)

func TestWatchQueue(t *testing.T) {
	e := func(typ, p string) agentproto.WatchEvent { return agentproto.WatchEvent{Type: typ, Path: p} }
	for _, c := range []struct {
		name  string
		limit int
		push  []agentproto.WatchEvent
		want  []agentproto.WatchEvent
	}{
		{
			name: "writes coalesce into a waiting write or create",
			push: []agentproto.WatchEvent{
				e(agentproto.WatchCreate, "a"), e(agentproto.WatchWrite, "a"), e(agentproto.WatchWrite, "b"),
				e(agentproto.WatchWrite, "a"), e(agentproto.WatchWrite, "b"), e(agentproto.WatchWrite, "c"),
			},
			want: []agentproto.WatchEvent{e(agentproto.WatchCreate, "a"), e(agentproto.WatchWrite, "b"), e(agentproto.WatchWrite, "c")},
		},
		{
			name: "a repeated create is dropped",
			push: []agentproto.WatchEvent{e(agentproto.WatchCreate, "a"), e(agentproto.WatchCreate, "a")},
			want: []agentproto.WatchEvent{e(agentproto.WatchCreate, "a")},
		},
		{
			name: "nothing coalesces across a remove",
			push: []agentproto.WatchEvent{
				e(agentproto.WatchCreate, "a"), e(agentproto.WatchRemove, "a"), e(agentproto.WatchCreate, "a"), e(agentproto.WatchWrite, "a"),
			},
			want: []agentproto.WatchEvent{e(agentproto.WatchCreate, "a"), e(agentproto.WatchRemove, "a"), e(agentproto.WatchCreate, "a")},
		},
		{
			name: "a rename ends coalescing of both its paths and what is below them",
			push: []agentproto.WatchEvent{
				e(agentproto.WatchCreate, "d/f"), e(agentproto.WatchCreate, "a"),
				{Type: agentproto.WatchRename, Path: "b", OldPath: "a", IsDir: true},
				e(agentproto.WatchCreate, "a"), e(agentproto.WatchCreate, "d/f"),
			},
			want: []agentproto.WatchEvent{
				e(agentproto.WatchCreate, "d/f"), e(agentproto.WatchCreate, "a"),
				{Type: agentproto.WatchRename, Path: "b", OldPath: "a", IsDir: true},
				e(agentproto.WatchCreate, "a"), e(agentproto.WatchCreate, "d/f"),
			},
		},
		{
			name:  "a full queue overflows once and drops the rest",
			limit: 2,
			push: []agentproto.WatchEvent{
				e(agentproto.WatchCreate, "a"), e(agentproto.WatchCreate, "b"), e(agentproto.WatchCreate, "c"), e(agentproto.WatchCreate, "d"),
				e(agentproto.WatchWrite, "a"),
			},
			want: []agentproto.WatchEvent{e(agentproto.WatchCreate, "a"), e(agentproto.WatchCreate, "b"), {Type: agentproto.WatchOverflow}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			limit := c.limit
			if limit == 0 {
				limit = 100
			}
			q := newWatchQueue(limit, time.Hour)
			for _, ev := range c.push {
				q.push(ev)
			}
			q.close() // everything waiting is taken at once
			got := takeAll(t, q)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func takeAll(t *testing.T, q *watchQueue) []agentproto.WatchEvent {
	t.Helper()
	var got []agentproto.WatchEvent
	for {
		evs, err := q.take(context.Background())
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			ev.Time = time.Time{}
			got = append(got, ev)
		}
	}
}

func TestWatchQueueWindowAndOverflowRecovery(t *testing.T) {
	const window = 100 * time.Millisecond
	q := newWatchQueue(1, window)
	start := time.Now()
	q.push(agentproto.WatchEvent{Type: agentproto.WatchCreate, Path: "a"})
	q.push(agentproto.WatchEvent{Type: agentproto.WatchCreate, Path: "b"}) // over the limit: overflow
	q.push(agentproto.WatchEvent{Type: agentproto.WatchCreate, Path: "c"}) // dropped
	q.overflow()                                                           // one is waiting already
	var got []string
	for len(got) < 2 {
		evs, err := q.take(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, ev.Type+" "+ev.Path)
		}
	}
	if waited := time.Since(start); waited < window {
		t.Errorf("events taken after %v, before their window of %v", waited, window)
	}
	if diff := cmp.Diff([]string{"create a", "overflow "}, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	// With the overflow sent, events are queued again.
	q.push(agentproto.WatchEvent{Type: agentproto.WatchWrite, Path: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := q.take(ctx)
	if err != nil || len(evs) != 1 || evs[0].Path != "a" {
		t.Fatalf("after the overflow: %v, %v", evs, err)
	}
	// take ends with its context.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := q.take(ctx); err != context.Canceled {
		t.Fatalf("take with a cancelled context: %v", err)
	}
}
