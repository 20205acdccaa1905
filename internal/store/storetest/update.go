package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

func testUpdateSandbox(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, map[string]string{"old": "1", "keep": "k"})
	expires := time.Now().Add(time.Hour)
	before := store.Time(time.Now())

	got, err := s.UpdateSandbox(ctx, sb.ID, func(x *store.Sandbox) error {
		x.ID, x.TenantID, x.CreatedAt = ids.New(), "intruder", time.Unix(0, 0) // ignored
		x.State = api.StateFailed
		x.Error = "agent did not start"
		x.Handle = []byte(`{"v":1}`)
		x.Env = map[string]string{"A": "b"}
		x.Limits.MemoryMB = 256
		x.ExpiresAt = &expires
		delete(x.Labels, "old") // in place: the store must notice
		x.Labels["new"] = "2"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSandbox: %v", err)
	}
	want := *sb
	want.State = api.StateFailed
	want.Error = "agent did not start"
	want.Handle = []byte(`{"v":1}`)
	want.Env = map[string]string{"A": "b"}
	want.Limits.MemoryMB = 256
	want.ExpiresAt = store.TimePtr(&expires)
	want.Labels = map[string]string{"keep": "k", "new": "2"}
	want.UpdatedAt, want.Rev = got.UpdatedAt, got.Rev
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("UpdateSandbox result (-want +got):\n%s", diff)
	}
	if got.Rev <= sb.Rev {
		t.Errorf("Rev after an update = %d; want more than %d, the revision before it", got.Rev, sb.Rev)
	}
	if got.UpdatedAt.Before(before) || got.UpdatedAt.Before(sb.UpdatedAt) || got.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt = %v, want a UTC time no earlier than %v", got.UpdatedAt, before)
	}
	read, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(got, read); diff != "" {
		t.Errorf("GetSandbox after update (-returned +read):\n%s", diff)
	}
	for labels, n := range map[string]int{"old=1": 0, "new=2": 1, "keep=k": 1} {
		k, v, _ := strings.Cut(labels, "=")
		list, _, err := s.ListSandboxes(ctx, store.ListOptions{Labels: map[string]string{k: v}})
		if err != nil || len(list) != n {
			t.Errorf("list by %s after update: %d, %v; want %d", labels, len(list), err, n)
		}
	}
	_, err = s.UpdateSandbox(ctx, ids.New(), func(*store.Sandbox) error { return nil })
	wantErr(t, "update of a missing sandbox", err, errdefs.ErrNotFound, "sandbox_not_found")
}

func testUpdateAborts(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, map[string]string{"a": "1"})
	errStop := errors.New("stop")
	_, err := s.UpdateSandbox(ctx, sb.ID, func(x *store.Sandbox) error {
		x.State = api.StateDestroyed
		x.Labels["b"] = "2"
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Errorf("UpdateSandbox returned %v, want fn's error", err)
	}
	_, err = s.UpdateSandbox(ctx, sb.ID, func(x *store.Sandbox) error {
		x.State = ""
		return nil
	})
	wantErr(t, "update to an empty state", err, errdefs.ErrInvalid, "invalid_sandbox")
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("sandbox after aborted updates (-want +got):\n%s", diff)
	}
}

// testUpdateConcurrent races read-modify-write updates against each other,
// against creates and against reads: no update may be lost and no writer may
// see a busy database.
func testUpdateConcurrent(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, nil)
	const workers, rounds = 20, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*(rounds+2))
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				_, err := s.UpdateSandbox(ctx, sb.ID, func(x *store.Sandbox) error {
					x.TimeoutS++
					if x.Labels == nil {
						x.Labels = map[string]string{}
					}
					x.Labels[fmt.Sprintf("w%02d", w)] = fmt.Sprint(x.TimeoutS)
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("worker %d update: %w", w, err)
				}
			}
			if err := s.CreateSandbox(ctx, &store.Sandbox{State: api.StateRunning, Labels: map[string]string{"by": fmt.Sprint(w)}}); err != nil {
				errs <- fmt.Errorf("worker %d create: %w", w, err)
			}
			if _, _, err := s.ListSandboxes(ctx, store.ListOptions{}); err != nil {
				errs <- fmt.Errorf("worker %d list: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if got.TimeoutS != workers*rounds {
		t.Errorf("TimeoutS = %d after %d increments: updates were lost", got.TimeoutS, workers*rounds)
	}
	if len(got.Labels) != workers {
		t.Errorf("%d labels, want one per worker (%d)", len(got.Labels), workers)
	}
	list, _, err := s.ListSandboxes(ctx, store.ListOptions{})
	if err != nil || len(list) != workers+1 {
		t.Errorf("ListSandboxes: %d, %v; want %d", len(list), err, workers+1)
	}
}
