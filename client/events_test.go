package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

func TestEvents(t *testing.T) {
	created := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	page := api.EventList{
		Events: []api.Event{
			{ID: "e1", SandboxID: "s001", Type: api.EventSandboxCreated, Message: "sandbox created", CreatedAt: created},
			{ID: "e2", SandboxID: "s001", Type: api.EventSandboxFailed, Message: "sandbox failed: no room",
				Data: map[string]any{"reason": "no room", "exit_code": float64(137)}, CreatedAt: created.Add(time.Second)},
		},
		NextCursor: "e2",
	}
	var (
		mu   sync.Mutex
		seen []recorded
	)
	requests := func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, recorded{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Auth: r.Header.Get("Authorization")})
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/events", "/v1/sandboxes/s001/events":
			writeJSON(w, http.StatusOK, page)
		default:
			writeError(w, http.StatusNotFound, "sandbox_not_found", "sandbox not found")
		}
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, testKey)
	ctx := t.Context()

	tests := []struct {
		name string
		call func() (*api.EventList, error)
		want recorded
	}{
		{
			name: "tenant, everything",
			call: func() (*api.EventList, error) { return c.Events(ctx, client.EventQuery{}) },
			want: recorded{Method: "GET", Path: "/v1/events"},
		},
		{
			name: "tenant, filtered",
			call: func() (*api.EventList, error) {
				return c.Events(ctx, client.EventQuery{SandboxID: "s001", Types: []string{api.EventSandboxStopped, api.EventSandboxCreated}, After: "e0", Limit: 5})
			},
			want: recorded{Method: "GET", Path: "/v1/events", RawQuery: "after=e0&limit=5&sandbox=s001&type=sandbox.stopped&type=sandbox.created"},
		},
		{
			name: "sandbox",
			call: func() (*api.EventList, error) {
				return c.SandboxEvents(ctx, "s001", client.EventQuery{SandboxID: "s001", After: "e1", Types: []string{api.EventSandboxOOM}})
			},
			want: recorded{Method: "GET", Path: "/v1/sandboxes/s001/events", RawQuery: "after=e1&type=sandbox.oom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			got, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&page, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			tt.want.Auth = "Bearer " + testKey
			reqs := requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if diff := cmp.Diff(tt.want, reqs[0]); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}

	mu.Lock()
	seen = nil
	mu.Unlock()
	if _, err := c.SandboxEvents(ctx, "nope", client.EventQuery{}); !client.IsNotFound(err) || client.Code(err) != "sandbox_not_found" {
		t.Errorf("unknown sandbox: %v, want sandbox_not_found", err)
	}
	var e *client.Error
	if _, err := c.SandboxEvents(ctx, "", client.EventQuery{}); err == nil || errors.As(err, &e) {
		t.Errorf("empty id: %v, want a client-side error", err)
	}
	if _, err := c.SandboxEvents(ctx, "s001", client.EventQuery{SandboxID: "s002"}); err == nil || errors.As(err, &e) {
		t.Errorf("query for another sandbox: %v, want a client-side error", err)
	}
	if n := len(requests()); n != 1 {
		t.Errorf("%d requests, want only the unknown sandbox's", n)
	}
}
