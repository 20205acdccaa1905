package storetest

import (
	"context"
	"fmt"
	"slices"
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

// newEvent appends an event of typ to ctx's tenant, about sandboxID when
// set.
func newEvent(t *testing.T, s store.Store, ctx context.Context, sandboxID, typ string) store.Event {
	t.Helper()
	e := store.Event{SandboxID: sandboxID, Type: typ, Message: typ + " happened"}
	if err := s.AppendEvent(ctx, &e); err != nil {
		t.Fatalf("AppendEvent(%s): %v", typ, err)
	}
	return e
}

// listEvents returns the IDs of one page of events, failing t on error.
func listEvents(t *testing.T, s store.Store, ctx context.Context, q store.EventQuery) ([]string, string) {
	t.Helper()
	evs, next, err := s.ListEvents(ctx, q)
	if err != nil {
		t.Fatalf("ListEvents(%+v): %v", q, err)
	}
	return eventIDs(evs), next
}

func eventIDs(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func testEventRoundTrip(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, nil)
	tokyo := time.FixedZone("JST", 9*3600)
	e := &store.Event{
		ID:        "chosen-by-the-caller", // replaced by the store's
		TenantID:  "someone-else",         // replaced by the caller's tenant
		SandboxID: sb.ID,
		Type:      api.EventSandboxFailed,
		Message:   "the agent did not start: héllo ✓",
		Data: map[string]any{
			"exit_code": 137, "oom": true, "signal": "KILL",
			"nested": map[string]any{"counts": []int{1, 2}},
		},
		CreatedAt: time.Date(2025, 3, 4, 5, 6, 7, 891011121, tokyo),
	}
	if err := s.AppendEvent(ctx, e); err != nil {
		t.Fatalf("AppendEvent: %v", err)
	}
	if e.TenantID != a.ID {
		t.Errorf("TenantID = %q, want the caller's %q", e.TenantID, a.ID)
	}
	if !ids.Valid(e.ID) {
		t.Errorf("ID = %q, want one the store made", e.ID)
	}
	if !e.CreatedAt.Equal(time.Date(2025, 3, 4, 5, 6, 7, 891011000, tokyo)) || e.CreatedAt.Location() != time.UTC {
		t.Errorf("AppendEvent left CreatedAt %v, want it in UTC to the microsecond", e.CreatedAt)
	}
	// Data comes back as JSON decodes it, and AppendEvent says so in place.
	wantData := map[string]any{
		"exit_code": float64(137), "oom": true, "signal": "KILL",
		"nested": map[string]any{"counts": []any{float64(1), float64(2)}},
	}
	if diff := cmp.Diff(wantData, e.Data); diff != "" {
		t.Errorf("Data after AppendEvent (-want +got):\n%s", diff)
	}
	got, next, err := s.ListEvents(ctx, store.EventQuery{})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if diff := cmp.Diff([]store.Event{*e}, got); diff != "" {
		t.Errorf("ListEvents (-appended +got):\n%s", diff)
	}
	if next != "" {
		t.Errorf("next cursor %q on the only page", next)
	}

	// Defaults: now for a zero time, nil for empty data, no sandbox.
	before := store.Time(time.Now())
	bare := &store.Event{Type: "tenant.note", Data: map[string]any{}}
	if err := s.AppendEvent(ctx, bare); err != nil {
		t.Fatalf("AppendEvent of a tenant event: %v", err)
	}
	if bare.CreatedAt.Before(before) || bare.CreatedAt.After(time.Now()) || bare.Data != nil {
		t.Errorf("defaults: CreatedAt %v (want about now), Data %#v (want nil)", bare.CreatedAt, bare.Data)
	}
	got, _, err = s.ListEvents(ctx, store.EventQuery{After: e.ID})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	if diff := cmp.Diff([]store.Event{*bare}, got); diff != "" {
		t.Errorf("tenant event (-appended +got):\n%s", diff)
	}

	for name, bad := range map[string]*store.Event{
		"no type":         {Message: "x"},
		"long type":       {Type: strings.Repeat("t", store.MaxEventType+1)},
		"long message":    {Type: "x", Message: strings.Repeat("m", store.MaxEventMessage+1)},
		"large data":      {Type: "x", Data: map[string]any{"blob": strings.Repeat("d", store.MaxEventData)}},
		"data not JSON":   {Type: "x", Data: map[string]any{"ch": make(chan int)}},
		"unknown sandbox": {Type: "x", SandboxID: ids.New()},
	} {
		err := s.AppendEvent(ctx, bad)
		if name == "unknown sandbox" {
			wantErr(t, name, err, errdefs.ErrNotFound, "sandbox_not_found")
		} else {
			wantErr(t, name, err, errdefs.ErrInvalid, "invalid_event")
		}
	}
	if got, _ := listEvents(t, s, ctx, store.EventQuery{}); len(got) != 2 {
		t.Errorf("%d events after the refused appends, want 2", len(got))
	}
}

// testEventOrder: IDs increase in the order appends happen, even many in
// one millisecond, from many goroutines, or with CreatedAt in the past, so
// a reader resuming after an ID never skips an event.
func testEventOrder(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, nil)
	var appended []string
	for i := range 100 {
		e := store.Event{SandboxID: sb.ID, Type: "seq", Message: fmt.Sprint(i)}
		if i == 50 {
			e.CreatedAt = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) // a time does not reorder
		}
		if err := s.AppendEvent(ctx, &e); err != nil {
			t.Fatalf("AppendEvent %d: %v", i, err)
		}
		if n := len(appended); n > 0 && e.ID <= appended[n-1] {
			t.Fatalf("event %d has ID %s, not after %s", i, e.ID, appended[n-1])
		}
		appended = append(appended, e.ID)
	}
	got, _ := listEvents(t, s, ctx, store.EventQuery{Limit: store.MaxLimit})
	if diff := cmp.Diff(appended, got); diff != "" {
		t.Errorf("ListEvents order (-appended +listed):\n%s", diff)
	}

	// Concurrent appends: each sees the IDs before it.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		more = map[string]bool{}
	)
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				e := store.Event{Type: "concurrent", Message: fmt.Sprint(w, i)}
				if err := s.AppendEvent(ctx, &e); err != nil {
					t.Errorf("concurrent AppendEvent: %v", err)
					return
				}
				mu.Lock()
				more[e.ID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got, _ = listEvents(t, s, ctx, store.EventQuery{After: appended[len(appended)-1], Limit: store.MaxLimit})
	if len(got) != len(more) || !slices.IsSorted(got) {
		t.Fatalf("after the concurrent appends: %d events, sorted %v; want %d sorted", len(got), slices.IsSorted(got), len(more))
	}
	for _, id := range got {
		if !more[id] {
			t.Errorf("listed %s, which no append returned", id)
		}
	}
}

func testEventPaging(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, other := newTenant(t, s, "b")
	sb := newSandbox(t, s, ctx, nil)
	var all []string
	for i := range 25 {
		all = append(all, newEvent(t, s, ctx, sb.ID, "seq").ID)
		if i%5 == 0 {
			newEvent(t, s, other, "", "seq") // interleaved, never seen
		}
	}

	walk := func(q store.EventQuery, wantPages []int) []string {
		t.Helper()
		var got []string
		var sizes []int
		for n := 0; ; n++ {
			if n > 100 {
				t.Fatalf("walk %+v: no end after 100 pages", q)
			}
			page, next := listEvents(t, s, ctx, q)
			got = append(got, page...)
			sizes = append(sizes, len(page))
			if next == "" {
				break
			}
			if next != page[len(page)-1] {
				t.Errorf("next cursor %q is not the page's last ID %q", next, page[len(page)-1])
			}
			q.After = next
		}
		if diff := cmp.Diff(wantPages, sizes); diff != "" {
			t.Errorf("walk %+v page sizes (-want +got):\n%s", q, diff)
		}
		return got
	}
	if diff := cmp.Diff(all, walk(store.EventQuery{Limit: 7}, []int{7, 7, 7, 4})); diff != "" {
		t.Errorf("walk, 7 a page (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all, walk(store.EventQuery{Limit: 25}, []int{25})); diff != "" {
		t.Errorf("one page of exactly 25 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all[10:], walk(store.EventQuery{After: all[9]}, []int{15})); diff != "" {
		t.Errorf("default page after the tenth (-want +got):\n%s", diff)
	}

	// A tail: after the last event there is nothing, until there is.
	last := all[len(all)-1]
	if got, next := listEvents(t, s, ctx, store.EventQuery{After: last}); len(got) != 0 || next != "" {
		t.Errorf("after the last event: %v, cursor %q; want nothing", got, next)
	}
	later := []string{newEvent(t, s, ctx, sb.ID, "seq").ID, newEvent(t, s, ctx, "", "tenant").ID}
	if got, next := listEvents(t, s, ctx, store.EventQuery{After: last}); !cmp.Equal(later, got) || next != "" {
		t.Errorf("resuming after %s: %v, cursor %q; want %v", last, got, next, later)
	}
	// After need not be an ID that exists: it is a point in the order.
	if got, _ := listEvents(t, s, ctx, store.EventQuery{After: ids.At(time.Now().Add(time.Hour))}); len(got) != 0 {
		t.Errorf("after a future ID: %v, want nothing", got)
	}
	if got, _ := listEvents(t, s, ctx, store.EventQuery{After: ids.At(time.Unix(0, 0)), Limit: store.MaxLimit * 10}); len(got) != 27 {
		t.Errorf("after the epoch with a huge limit: %d events, want 27", len(got))
	}

	for _, after := range []string{"not-an-id", strings.ToUpper(all[0]), all[0] + "0", store.EncodeCursor(all[0])} {
		_, _, err := s.ListEvents(ctx, store.EventQuery{After: after})
		wantErr(t, "after "+after, err, errdefs.ErrInvalid, "invalid_cursor")
	}
}

func testEventFilters(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, other := newTenant(t, s, "b")
	x := newSandbox(t, s, ctx, nil)
	y := newSandbox(t, s, ctx, nil)
	otherSB := newSandbox(t, s, other, nil)
	xCreated := newEvent(t, s, ctx, x.ID, api.EventSandboxCreated).ID
	yCreated := newEvent(t, s, ctx, y.ID, api.EventSandboxCreated).ID
	xStopped := newEvent(t, s, ctx, x.ID, api.EventSandboxStopped).ID
	note := newEvent(t, s, ctx, "", "tenant.note").ID
	yFailed := newEvent(t, s, ctx, y.ID, api.EventSandboxFailed).ID
	newEvent(t, s, other, otherSB.ID, api.EventSandboxCreated)

	tests := []struct {
		name string
		q    store.EventQuery
		want []string
	}{
		{"all", store.EventQuery{}, []string{xCreated, yCreated, xStopped, note, yFailed}},
		{"one sandbox", store.EventQuery{SandboxID: x.ID}, []string{xCreated, xStopped}},
		{"one type", store.EventQuery{Types: []string{api.EventSandboxCreated}}, []string{xCreated, yCreated}},
		{"two types", store.EventQuery{Types: []string{api.EventSandboxFailed, "tenant.note"}}, []string{note, yFailed}},
		{"sandbox and type", store.EventQuery{SandboxID: y.ID, Types: []string{api.EventSandboxFailed, api.EventSandboxStopped}}, []string{yFailed}},
		{"sandbox and after", store.EventQuery{SandboxID: x.ID, After: xCreated}, []string{xStopped}},
		{"type and after", store.EventQuery{Types: []string{api.EventSandboxCreated}, After: xCreated}, []string{yCreated}},
		{"unknown type", store.EventQuery{Types: []string{"sandbox.nope"}}, nil},
		{"unknown sandbox", store.EventQuery{SandboxID: ids.New()}, nil},
		{"another tenant's sandbox", store.EventQuery{SandboxID: otherSB.ID}, nil},
	}
	for _, tt := range tests {
		got, next := listEvents(t, s, ctx, tt.q)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if next != "" {
			t.Errorf("%s: next cursor %q on the only page", tt.name, next)
		}
	}
	// Filters and paging together: a page of one sandbox's events.
	got, next := listEvents(t, s, ctx, store.EventQuery{Types: []string{api.EventSandboxCreated, api.EventSandboxFailed}, Limit: 2})
	if !cmp.Equal([]string{xCreated, yCreated}, got) || next != yCreated {
		t.Errorf("filtered page of 2: %v, cursor %q; want [%s %s], cursor %s", got, next, xCreated, yCreated, yCreated)
	}
}

func testEventIsolation(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	b, ctxB := newTenant(t, s, "b")
	sbA := newSandbox(t, s, ctxA, nil)
	sbB := newSandbox(t, s, ctxB, nil)
	evA := newEvent(t, s, ctxA, sbA.ID, api.EventSandboxCreated)
	newEvent(t, s, ctxA, "", "tenant.note")
	adminB := as(b.ID, api.RoleAdmin)

	for name, ctx := range map[string]context.Context{"member of B": ctxB, "admin of B": adminB} {
		for _, q := range []store.EventQuery{{}, {SandboxID: sbA.ID}, {Types: []string{api.EventSandboxCreated}}, {After: ids.At(time.Unix(0, 0))}} {
			if got, next := listEvents(t, s, ctx, q); len(got) != 0 || next != "" {
				t.Errorf("%s lists %+v: %v, cursor %q; want none", name, q, got, next)
			}
		}
		// An event about A's sandbox cannot be filed under B.
		err := s.AppendEvent(ctx, &store.Event{SandboxID: sbA.ID, Type: "forged"})
		wantErr(t, name+" appends about A's sandbox", err, errdefs.ErrNotFound, "sandbox_not_found")
	}
	// B's own events, after A's ID, are B's only.
	evB := newEvent(t, s, ctxB, sbB.ID, api.EventSandboxCreated)
	if got, _ := listEvents(t, s, ctxB, store.EventQuery{After: evA.ID}); !cmp.Equal([]string{evB.ID}, got) {
		t.Errorf("B after A's event: %v, want only B's %s", got, evB.ID)
	}
	if got, _ := listEvents(t, s, ctxA, store.EventQuery{}); len(got) != 2 || slices.Contains(got, evB.ID) {
		t.Errorf("A lists %v; want its 2 events and not B's", got)
	}

	// The system files events for any tenant, which must be named, and
	// lists every tenant's.
	sysEv := &store.Event{TenantID: a.ID, SandboxID: sbA.ID, Type: api.EventSandboxExpired}
	if err := s.AppendEvent(system(), sysEv); err != nil {
		t.Fatalf("system appends for A: %v", err)
	}
	if sysEv.TenantID != a.ID {
		t.Errorf("system event's tenant = %q, want %q", sysEv.TenantID, a.ID)
	}
	wantErr(t, "system appends without a tenant", s.AppendEvent(system(), &store.Event{Type: "x"}), errdefs.ErrInvalid, "invalid_event")
	err := s.AppendEvent(system(), &store.Event{TenantID: a.ID, SandboxID: sbB.ID, Type: "x"})
	wantErr(t, "system appends for A about B's sandbox", err, errdefs.ErrNotFound, "sandbox_not_found")
	err = s.AppendEvent(system(), &store.Event{TenantID: ids.New(), Type: "x"})
	wantErr(t, "system appends for a missing tenant", err, errdefs.ErrNotFound, "tenant_not_found")
	if got, _ := listEvents(t, s, ctxA, store.EventQuery{Types: []string{api.EventSandboxExpired}}); !cmp.Equal([]string{sysEv.ID}, got) {
		t.Errorf("A's expired events: %v, want the system's %s", got, sysEv.ID)
	}
	if got, _ := listEvents(t, s, system(), store.EventQuery{}); len(got) != 4 {
		t.Errorf("the system lists %d events, want all 4 of both tenants", len(got))
	}
}

func testEventNoPrincipal(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, nil)
	newEvent(t, s, ctx, sb.ID, api.EventSandboxCreated)
	bg := context.Background()
	err := s.AppendEvent(bg, &store.Event{TenantID: sb.TenantID, SandboxID: sb.ID, Type: "x"})
	wantErr(t, "AppendEvent", err, errdefs.ErrForbidden, "no_tenant")
	_, _, err = s.ListEvents(bg, store.EventQuery{})
	wantErr(t, "ListEvents", err, errdefs.ErrForbidden, "no_tenant")
	_, _, err = s.ListEvents(bg, store.EventQuery{SandboxID: sb.ID})
	wantErr(t, "ListEvents of a sandbox", err, errdefs.ErrForbidden, "no_tenant")
	if got, _ := listEvents(t, s, ctx, store.EventQuery{}); len(got) != 1 {
		t.Errorf("%d events after calls without principal, want 1", len(got))
	}
}

// testEventsOfDeletedSandbox: events outlive a destroyed sandbox (its row
// stays) but go with its row when that is deleted.
func testEventsOfDeletedSandbox(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	gone := newSandbox(t, s, ctx, nil)
	kept := newSandbox(t, s, ctx, nil)
	newEvent(t, s, ctx, gone.ID, api.EventSandboxCreated)
	if _, err := s.UpdateSandbox(ctx, gone.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateDestroyed
		return nil
	}); err != nil {
		t.Fatalf("UpdateSandbox: %v", err)
	}
	newEvent(t, s, ctx, gone.ID, api.EventSandboxDestroyed)
	keep := []string{newEvent(t, s, ctx, kept.ID, api.EventSandboxCreated).ID, newEvent(t, s, ctx, "", "tenant.note").ID}
	if got, _ := listEvents(t, s, ctx, store.EventQuery{SandboxID: gone.ID}); len(got) != 2 {
		t.Errorf("a destroyed sandbox has %d events, want 2", len(got))
	}
	if err := s.DeleteSandbox(ctx, gone.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if got, _ := listEvents(t, s, ctx, store.EventQuery{}); !cmp.Equal(keep, got) {
		t.Errorf("events after deleting a sandbox's row: %v, want %v", got, keep)
	}
}

// testEventTrim: retention deletes by age and by count per tenant, in
// batches, and a tenant's count never costs another tenant a row.
func testEventTrim(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	sbA := newSandbox(t, s, ctxA, nil)
	now := time.Now()
	at := func(ctx context.Context, sandboxID string, created time.Time) string {
		t.Helper()
		e := store.Event{SandboxID: sandboxID, Type: api.EventProcessStarted, Message: "m", CreatedAt: created}
		if err := s.AppendEvent(ctx, &e); err != nil {
			t.Fatalf("AppendEvent: %v", err)
		}
		return e.ID
	}
	trim := func(what string, tr store.EventTrim, want int) {
		t.Helper()
		n, err := s.TrimEvents(system(), tr)
		if err != nil || n != want {
			t.Fatalf("%s: TrimEvents(%+v) = %d, %v; want %d", what, tr, n, err, want)
		}
	}

	// Only the system trims.
	for name, ctx := range map[string]context.Context{"member": ctxA, "admin": as(a.ID, api.RoleAdmin)} {
		_, err := s.TrimEvents(ctx, store.EventTrim{MaxPerTenant: 1})
		wantErr(t, name+" trims", err, errdefs.ErrForbidden, "system_only")
	}

	// By age: each tenant's old events go, the recent stay.
	old := now.Add(-48 * time.Hour)
	at(ctxA, sbA.ID, old)
	at(ctxA, "", old.Add(time.Minute))
	at(ctxB, "", old)
	keepA := []string{at(ctxA, sbA.ID, now), at(ctxA, "", now)}
	keepB := []string{at(ctxB, "", now)}
	trim("nothing to trim", store.EventTrim{}, 0)
	trim("by age", store.EventTrim{Before: now.Add(-24 * time.Hour)}, 3)
	if got, _ := listEvents(t, s, ctxA, store.EventQuery{}); !cmp.Equal(keepA, got) {
		t.Errorf("A after trimming by age: %v, want %v", got, keepA)
	}
	if got, _ := listEvents(t, s, ctxB, store.EventQuery{}); !cmp.Equal(keepB, got) {
		t.Errorf("B after trimming by age: %v, want %v", got, keepB)
	}

	// By count: A floods past the limit, over more than one batch; only
	// A's oldest go, and B, under the limit, keeps everything.
	flood := store.TrimBatch + 200
	var all []string
	all = append(all, keepA...)
	for range flood {
		all = append(all, at(ctxA, sbA.ID, time.Time{}))
	}
	for range 5 {
		keepB = append(keepB, at(ctxB, "", time.Time{}))
	}
	const max = 100
	trim("by count", store.EventTrim{MaxPerTenant: max}, len(all)-max)
	var got []string
	for q := (store.EventQuery{Limit: store.MaxLimit}); ; {
		page, next := listEvents(t, s, ctxA, q)
		got = append(got, page...)
		if next == "" {
			break
		}
		q.After = next
	}
	if want := all[len(all)-max:]; !cmp.Equal(want, got) {
		t.Errorf("A after trimming by count: %d events from %v, want its newest %d", len(got), got[:min(len(got), 1)], max)
	}
	if got, _ := listEvents(t, s, ctxB, store.EventQuery{}); !cmp.Equal(keepB, got) {
		t.Errorf("B after A was trimmed by count: %v, want all of its %v", got, keepB)
	}
	trim("again", store.EventTrim{Before: now.Add(-24 * time.Hour), MaxPerTenant: max}, 0)
}
