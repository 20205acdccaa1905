package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestEvents: a sandbox's create, stop, start and destroy show in its
// event log, in that order, for its tenant only, and stay readable after
// it is destroyed.
func TestEvents(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	c := s.client()
	acme, err := c.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	other := client.New(s.url, acme.Key.Secret)

	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	wantTypes := []string{api.EventSandboxCreated, api.EventSandboxStopped, api.EventSandboxStarted, api.EventSandboxDestroyed}
	list, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	evs := list.Events
	if got := typesOf(evs); !slices.Equal(got, wantTypes) || list.NextCursor != "" {
		t.Fatalf("events of the destroyed sandbox: %v, cursor %q; want %v and none", got, list.NextCursor, wantTypes)
	}
	for i, e := range evs {
		if e.SandboxID != sb.ID || e.Message == "" || e.CreatedAt.IsZero() {
			t.Errorf("event %d = %+v; want sandbox %s, a message and a time", i, e, sb.ID)
		}
		if i > 0 && (e.ID <= evs[i-1].ID || e.CreatedAt.Before(evs[i-1].CreatedAt)) {
			t.Errorf("event %d (%s at %v) is not after event %d (%s at %v)", i, e.ID, e.CreatedAt, i-1, evs[i-1].ID, evs[i-1].CreatedAt)
		}
	}
	if evs[0].Data["template"] != sb.Template || evs[0].Data["driver"] != sb.Driver {
		t.Errorf("created event's data = %v; want template %q and driver %q", evs[0].Data, sb.Template, sb.Driver)
	}

	// The tenant's log holds the same four; pages resume after a cursor,
	// and filters narrow.
	all, err := c.Events(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idsOfEvents(all.Events), idsOfEvents(evs)) {
		t.Errorf("tenant log = %v, want %v", typesOf(all.Events), wantTypes)
	}
	first, err := c.Events(ctx, client.EventQuery{Limit: 3})
	if err != nil || len(first.Events) != 3 || first.NextCursor != evs[2].ID {
		t.Fatalf("first page of 3 = %+v, %v; want 3 events and cursor %s", first, err, evs[2].ID)
	}
	rest, err := c.Events(ctx, client.EventQuery{Limit: 3, After: first.NextCursor})
	if err != nil || !slices.Equal(idsOfEvents(rest.Events), []string{evs[3].ID}) || rest.NextCursor != "" {
		t.Fatalf("second page = %+v, %v; want the destroyed event alone", rest, err)
	}
	lifecycle, err := c.Events(ctx, client.EventQuery{SandboxID: sb.ID, Types: []string{api.EventSandboxStopped, api.EventSandboxStarted}})
	if err != nil || !slices.Equal(typesOf(lifecycle.Events), wantTypes[1:3]) {
		t.Fatalf("stopped and started = %+v, %v", lifecycle, err)
	}
	if _, err := c.Events(ctx, client.EventQuery{After: "not-an-id"}); client.Code(err) != "invalid_cursor" {
		t.Errorf("after not-an-id: %v, want invalid_cursor", err)
	}
	if _, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Limit: 5000}); client.Code(err) != "invalid_request" {
		t.Errorf("limit 5000: %v, want invalid_request", err)
	}

	// Another tenant sees none of it, whatever it asks.
	if _, err := other.SandboxEvents(ctx, sb.ID, client.EventQuery{}); client.Code(err) != "sandbox_not_found" {
		t.Errorf("other tenant reads the sandbox's events: %v, want sandbox_not_found", err)
	}
	for _, q := range []client.EventQuery{{}, {SandboxID: sb.ID}, {Types: wantTypes}, {After: evs[0].ID}} {
		got, err := other.Events(ctx, q)
		if err != nil || len(got.Events) != 0 || got.NextCursor != "" {
			t.Errorf("other tenant lists %+v: %+v, %v; want nothing", q, got, err)
		}
	}
}

// TestEventsOfExpiry: a sandbox past its timeout shows expired, then
// destroyed.
func TestEventsOfExpiry(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	c := s.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{api.EventSandboxCreated, api.EventSandboxExpired, api.EventSandboxDestroyed}
	deadline := time.Now().Add(15 * time.Second)
	for {
		list, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{})
		if err != nil {
			t.Fatal(err)
		}
		// A timeout of a second may come with a warning before it
		// (sandbox.expiring, within --expiry-warning) or not, as the
		// reaper's ticks fall.
		evs := slices.DeleteFunc(slices.Clone(list.Events), func(e api.Event) bool { return e.Type == api.EventSandboxExpiring })
		got := typesOf(evs)
		if slices.Equal(got, want) {
			if evs[1].Data["timeout_s"] != float64(1) {
				t.Errorf("expired event's data = %v, want timeout_s 1", evs[1].Data)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events of a sandbox with timeout_s 1: %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func typesOf(evs []api.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func idsOfEvents(evs []api.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}
