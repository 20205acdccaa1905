package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

func testListFilters(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, other := newTenant(t, s, "b")
	prodX := newSandbox(t, s, ctx, map[string]string{"env": "prod", "team": "x"})
	prod := newSandbox(t, s, ctx, map[string]string{"env": "prod"})
	devX := newSandbox(t, s, ctx, map[string]string{"env": "dev", "team": "x"})
	bare := newSandbox(t, s, ctx, nil)
	newSandbox(t, s, other, map[string]string{"env": "prod", "team": "x"})
	if _, err := s.UpdateSandbox(ctx, prod.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateStopped
		return nil
	}); err != nil {
		t.Fatalf("UpdateSandbox: %v", err)
	}

	tests := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"all", store.ListOptions{}, sortedIDs(false, prodX, prod, devX, bare)},
		{"running", store.ListOptions{State: api.StateRunning}, sortedIDs(false, prodX, devX, bare)},
		{"stopped", store.ListOptions{State: api.StateStopped}, sortedIDs(false, prod)},
		{"destroyed", store.ListOptions{State: api.StateDestroyed}, nil},
		{"one label", store.ListOptions{Labels: map[string]string{"env": "prod"}}, sortedIDs(false, prodX, prod)},
		{"all labels", store.ListOptions{Labels: map[string]string{"env": "prod", "team": "x"}}, sortedIDs(false, prodX)},
		{"label shared across values", store.ListOptions{Labels: map[string]string{"team": "x"}}, sortedIDs(false, prodX, devX)},
		{"state and label", store.ListOptions{State: api.StateRunning, Labels: map[string]string{"env": "prod"}}, sortedIDs(false, prodX)},
		{"unmatched value", store.ListOptions{Labels: map[string]string{"env": "staging"}}, nil},
		{"empty value", store.ListOptions{Labels: map[string]string{"team": ""}}, nil},
		{"one of two matches", store.ListOptions{Labels: map[string]string{"env": "dev", "team": "y"}}, nil},
	}
	for _, tt := range tests {
		got, next, err := s.ListSandboxes(ctx, tt.opts)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, idsOf(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if next != "" {
			t.Errorf("%s: next cursor %q on the only page", tt.name, next)
		}
	}
}

func testListPagination(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, other := newTenant(t, s, "b")
	var all, even []*store.Sandbox
	for i := range 25 {
		labels := map[string]string{"parity": "odd"}
		if i%2 == 0 {
			labels["parity"] = "even"
		}
		sb := newSandbox(t, s, ctx, labels)
		all = append(all, sb)
		if i%2 == 0 {
			even = append(even, sb)
		}
		if i < 5 {
			newSandbox(t, s, other, labels)
		}
	}

	walk := func(opts store.ListOptions, wantPages []int, insert bool) []string {
		t.Helper()
		var got []string
		var sizes []int
		for page := 0; ; page++ {
			if page > 100 {
				t.Fatalf("walk %+v: no end after 100 pages", opts)
			}
			list, next, err := s.ListSandboxes(ctx, opts)
			if err != nil {
				t.Fatalf("walk %+v, page %d: %v", opts, page, err)
			}
			got = append(got, idsOf(list)...)
			sizes = append(sizes, len(list))
			if page == 0 && insert {
				// A sandbox made during a walk is newer than its cursor,
				// so it does not disturb the walk.
				sb := &store.Sandbox{ID: ids.At(time.Now().Add(time.Second)), State: api.StateRunning,
					Labels: map[string]string{"parity": "even"}}
				if err := s.CreateSandbox(ctx, sb); err != nil {
					t.Fatalf("CreateSandbox during the walk: %v", err)
				}
				even = append(even, sb)
			}
			if next == "" {
				break
			}
			opts.Cursor = next
		}
		if diff := cmp.Diff(wantPages, sizes); diff != "" {
			t.Errorf("walk %+v page sizes (-want +got):\n%s", opts, diff)
		}
		return got
	}

	if diff := cmp.Diff(sortedIDs(false, all...), walk(store.ListOptions{Limit: 7}, []int{7, 7, 7, 4}, true)); diff != "" {
		t.Errorf("walk of every sandbox, 7 a page (-want +got):\n%s", diff)
	}
	evenWalk := walk(store.ListOptions{Limit: 5, State: api.StateRunning, Labels: map[string]string{"parity": "even"}}, []int{5, 5, 4}, false)
	if diff := cmp.Diff(sortedIDs(false, even...), evenWalk); diff != "" {
		t.Errorf("filtered walk, 5 a page (-want +got):\n%s", diff)
	}
	// A page exactly as long as what is left has no next cursor.
	if got := walk(store.ListOptions{Limit: 26}, []int{26}, false); len(got) != 26 {
		t.Errorf("one page of 26 holds %d, want 26", len(got))
	}

	for _, cursor := range []string{"not-a-cursor!", "djE6", "aGVsbG8"} {
		_, _, err := s.ListSandboxes(ctx, store.ListOptions{Cursor: cursor})
		wantErr(t, "cursor "+cursor, err, errdefs.ErrInvalid, "invalid_cursor")
	}
}

func testListLimits(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	for range store.DefaultLimit + 1 {
		newSandbox(t, s, ctx, nil)
	}
	list, next, err := s.ListSandboxes(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if len(list) != store.DefaultLimit || next == "" {
		t.Fatalf("default page: %d sandboxes, cursor %q; want %d and a cursor", len(list), next, store.DefaultLimit)
	}
	rest, next, err := s.ListSandboxes(ctx, store.ListOptions{Cursor: next, Limit: -1})
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if len(rest) != 1 || next != "" {
		t.Errorf("last page: %d sandboxes, cursor %q; want 1 and none", len(rest), next)
	}
	big, _, err := s.ListSandboxes(ctx, store.ListOptions{Limit: store.MaxLimit * 10})
	if err != nil || len(big) != store.DefaultLimit+1 {
		t.Errorf("page of limit %d: %d sandboxes, %v; want %d", store.MaxLimit*10, len(big), err, store.DefaultLimit+1)
	}
}

// sortedIDs returns the sandboxes' ids oldest first (asc) or newest first.
func sortedIDs(asc bool, sbs ...*store.Sandbox) []string {
	out := idsOf(sbs)
	slices.Sort(out)
	if !asc {
		slices.Reverse(out)
	}
	return out
}

func idsOf(sbs []*store.Sandbox) []string {
	var out []string
	for _, sb := range sbs {
		out = append(out, sb.ID)
	}
	return out
}
