package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// eventsFixture is the API over a real SQLite store holding two tenants'
// sandboxes and events, recorded straight in the store.
type eventsFixture struct {
	url        string
	keyA, keyB string
	sbA, goneA string // A's running and destroyed sandboxes
	sbB        string
	aEvents    []string // every one of A's event ids, in order
	aCreated   string   // sbA's events
	aStopped   string
	goneA1     string // goneA's event
	bEv1       string // B's only event
}

func newEventsFixture(t *testing.T) *eventsFixture {
	t.Helper()
	tn := newAPIFixture(t)
	st := tn.st
	sys := tenancy.System(context.Background())
	f := &eventsFixture{url: tn.srv.URL, keyA: tn.keyA, keyB: tn.keyB}
	a, b := store.Tenant{ID: tn.a}, store.Tenant{ID: tn.b}
	sandbox := func(tenantID string, state api.SandboxState) string {
		sb := &store.Sandbox{TenantID: tenantID, State: state, Template: "host", Driver: "fake"}
		if err := st.CreateSandbox(sys, sb); err != nil {
			t.Fatal(err)
		}
		return sb.ID
	}
	f.sbA, f.goneA, f.sbB = sandbox(a.ID, api.StateRunning), sandbox(a.ID, api.StateDestroyed), sandbox(b.ID, api.StateRunning)
	event := func(tenantID, sandboxID, typ string, data map[string]any) string {
		e := &store.Event{TenantID: tenantID, SandboxID: sandboxID, Type: typ, Message: typ + " for a person", Data: data}
		if err := st.AppendEvent(sys, e); err != nil {
			t.Fatal(err)
		}
		if tenantID == a.ID {
			f.aEvents = append(f.aEvents, e.ID)
		}
		return e.ID
	}
	f.aCreated = event(a.ID, f.sbA, api.EventSandboxCreated, map[string]any{"template": "host"})
	f.bEv1 = event(b.ID, f.sbB, api.EventSandboxCreated, nil)
	f.goneA1 = event(a.ID, f.goneA, api.EventSandboxDestroyed, nil)
	f.aStopped = event(a.ID, f.sbA, api.EventSandboxStopped, nil)
	event(a.ID, "", "tenant.note", nil)
	return f
}

// get sends GET path with key and returns the status and body.
func (f *eventsFixture) get(t *testing.T, key, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestEventRoutes(t *testing.T) {
	f := newEventsFixture(t)
	sbPath := "/v1/sandboxes/" + f.sbA + "/events"
	tests := []struct {
		name     string
		key      string // A's unless set
		path     string
		wantIDs  []string
		wantNext string
	}{
		{"sandbox", "", sbPath, []string{f.aCreated, f.aStopped}, ""},
		{"sandbox by type", "", sbPath + "?type=sandbox.stopped", []string{f.aStopped}, ""},
		{"sandbox, two types", "", sbPath + "?type=sandbox.stopped&type=sandbox.created", []string{f.aCreated, f.aStopped}, ""},
		{"sandbox page", "", sbPath + "?limit=1", []string{f.aCreated}, f.aCreated},
		{"sandbox next page", "", sbPath + "?limit=1&after=" + f.aCreated, []string{f.aStopped}, ""},
		{"destroyed sandbox", "", "/v1/sandboxes/" + f.goneA + "/events", []string{f.goneA1}, ""},
		{"tenant", "", "/v1/events", f.aEvents, ""},
		{"tenant after", "", "/v1/events?after=" + f.aEvents[0], f.aEvents[1:], ""},
		{"tenant by sandbox", "", "/v1/events?sandbox=" + f.sbA, []string{f.aCreated, f.aStopped}, ""},
		{"tenant by another tenant's sandbox", "", "/v1/events?sandbox=" + f.sbB, nil, ""},
		{"tenant by type and page", "", "/v1/events?type=sandbox.created&type=sandbox.stopped&limit=1", []string{f.aCreated}, f.aCreated},
		{"other tenant", f.keyB, "/v1/events", []string{f.bEv1}, ""},
		{"other tenant after A's", f.keyB, "/v1/events?after=" + f.aCreated, []string{f.bEv1}, ""},
		{"other tenant after A's later one", f.keyB, "/v1/events?after=" + f.aStopped, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := tt.key
			if key == "" {
				key = f.keyA
			}
			status, body := f.get(t, key, tt.path)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			var raw struct {
				Events json.RawMessage `json:"events"`
			}
			if err := json.Unmarshal(body, &raw); err != nil || string(raw.Events) == "null" {
				t.Fatalf("body %s: events must be a list", body)
			}
			var list api.EventList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range list.Events {
				got = append(got, e.ID)
			}
			if diff := cmp.Diff(tt.wantIDs, got); diff != "" {
				t.Errorf("event ids (-want +got):\n%s", diff)
			}
			if list.NextCursor != tt.wantNext {
				t.Errorf("next_cursor = %q, want %q", list.NextCursor, tt.wantNext)
			}
		})
	}
}

func TestEventWireShape(t *testing.T) {
	f := newEventsFixture(t)
	status, body := f.get(t, f.keyA, "/v1/events?limit=1")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	ev := got["events"].([]any)[0].(map[string]any)
	if id, _ := ev["id"].(string); !ids.Valid(id) {
		t.Errorf("id %v is not an id", ev["id"])
	}
	delete(ev, "id")
	delete(ev, "created_at")
	want := map[string]any{
		"sandbox_id": f.sbA, "type": "sandbox.created", "message": "sandbox.created for a person",
		"data": map[string]any{"template": "host"},
	}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("event on the wire (-want +got):\n%s", diff)
	}
	if got["next_cursor"] == nil {
		t.Errorf("no next_cursor on a page of 1 of several: %s", body)
	}
	// A tenant event has no sandbox_id, and no data when it has none.
	_, body = f.get(t, f.keyA, "/v1/events?type=tenant.note")
	if strings.Contains(string(body), "sandbox_id") || strings.Contains(string(body), `"data"`) || strings.Contains(string(body), "next_cursor") {
		t.Errorf("tenant event: %s; want no sandbox_id, data or next_cursor", body)
	}
}

func TestEventRouteErrors(t *testing.T) {
	f := newEventsFixture(t)
	sbPath := "/v1/sandboxes/" + f.sbA + "/events"
	tests := []struct {
		name, key, path string
		status          int
		code            string
	}{
		{"unknown sandbox", f.keyA, "/v1/sandboxes/" + ids.New() + "/events", 404, "sandbox_not_found"},
		{"another tenant's sandbox", f.keyB, sbPath, 404, "sandbox_not_found"},
		{"limit zero", f.keyA, sbPath + "?limit=0", 400, "invalid_request"},
		{"limit words", f.keyA, "/v1/events?limit=ten", 400, "invalid_request"},
		{"limit too big", f.keyA, "/v1/events?limit=1001", 400, "invalid_request"},
		{"after not an id", f.keyA, "/v1/events?after=yesterday", 400, "invalid_cursor"},
		{"after an opaque cursor", f.keyA, sbPath + "?after=" + store.EncodeCursor(f.aCreated), 400, "invalid_cursor"},
		{"bad input before the lookup", f.keyB, sbPath + "?after=x", 400, "invalid_cursor"},
		{"empty type", f.keyA, "/v1/events?type=", 400, "invalid_request"},
		{"too many types", f.keyA, "/v1/events?" + strings.Repeat("type=a&", maxTypeFilters+1), 400, "invalid_request"},
		{"no key", "", "/v1/events", 401, "missing_api_key"},
		{"no key for a sandbox", "", sbPath, 401, "missing_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := f.get(t, tt.key, tt.path)
			var e api.Error
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if status != tt.status || e.Error.Code != tt.code || e.Error.Message == "" {
				t.Errorf("got %d %s %q, want %d %s", status, e.Error.Code, e.Error.Message, tt.status, tt.code)
			}
		})
	}
}
