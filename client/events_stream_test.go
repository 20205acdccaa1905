package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// streamRequest is what the stream server saw of a request.
type streamRequest struct {
	Path, RawQuery, Accept, LastEventID, Auth string
}

// newStreamServer answers every request with an event stream of evs (a
// heartbeat between each), then holds it open until the client leaves
// when hold is set. It sends each request it sees on reqs.
func newStreamServer(t *testing.T, evs []api.Event, hold bool, reqs chan<- streamRequest) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- streamRequest{Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Accept: r.Header.Get("Accept"),
			LastEventID: r.Header.Get("Last-Event-ID"), Auth: r.Header.Get("Authorization")}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range evs {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, ": keep-alive\n\nid: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Type, b)
		}
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestStreamEvents(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	evs := []api.Event{
		{ID: "e1", SandboxID: "s001", Type: api.EventSandboxCreated, Message: "sandbox created", CreatedAt: at},
		{ID: "e2", SandboxID: "s001", Type: api.EventProcessExited, Message: "process 7 exited",
			Data: map[string]any{"pid": float64(7), "exit_code": float64(0)}, CreatedAt: at.Add(time.Second)},
	}
	reqs := make(chan streamRequest, 10)
	c := client.New(newStreamServer(t, evs, false, reqs), testKey)
	ctx := t.Context()

	tests := []struct {
		name string
		open func() (*client.EventStream, error)
		want streamRequest
	}{
		{
			name: "tenant",
			open: func() (*client.EventStream, error) { return c.StreamEvents(ctx, client.EventQuery{}) },
			want: streamRequest{Path: "/v1/events"},
		},
		{
			name: "tenant, filtered and resumed",
			open: func() (*client.EventStream, error) {
				return c.StreamEvents(ctx, client.EventQuery{SandboxID: "s001", Types: []string{api.EventSandboxOOM}, After: "e0", Limit: 5})
			},
			want: streamRequest{Path: "/v1/events", RawQuery: "sandbox=s001&type=sandbox.oom", LastEventID: "e0"},
		},
		{
			name: "sandbox",
			open: func() (*client.EventStream, error) {
				return c.StreamSandboxEvents(ctx, "s001", client.EventQuery{SandboxID: "s001", After: "e0"})
			},
			want: streamRequest{Path: "/v1/sandboxes/s001/events", LastEventID: "e0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := tt.open()
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			tt.want.Accept, tt.want.Auth = "text/event-stream", "Bearer "+testKey
			if diff := cmp.Diff(tt.want, <-reqs); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if st.LastID() != tt.want.LastEventID {
				t.Errorf("LastID before any event = %q, want the After %q", st.LastID(), tt.want.LastEventID)
			}
			var got []api.Event
			for {
				e, err := st.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e)
				if st.LastID() != e.ID {
					t.Errorf("LastID = %q after event %q", st.LastID(), e.ID)
				}
			}
			if diff := cmp.Diff(evs, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}

	var e *client.Error
	if _, err := c.StreamSandboxEvents(ctx, "", client.EventQuery{}); err == nil || errors.As(err, &e) {
		t.Errorf("empty id: %v, want a client-side error", err)
	}
	if _, err := c.StreamSandboxEvents(ctx, "s001", client.EventQuery{SandboxID: "s002"}); err == nil || errors.As(err, &e) {
		t.Errorf("query for another sandbox: %v, want a client-side error", err)
	}
	if len(reqs) != 0 {
		t.Errorf("%d requests sent for refused calls", len(reqs))
	}
}

func TestStreamEventsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/events":
			writeError(w, http.StatusTooManyRequests, "too_many_streams", "too many streams")
		case "/v1/sandboxes/json/events":
			writeJSON(w, http.StatusOK, api.EventList{Events: []api.Event{}})
		default:
			writeError(w, http.StatusNotFound, "sandbox_not_found", "sandbox not found")
		}
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, testKey)
	ctx := t.Context()
	if _, err := c.StreamEvents(ctx, client.EventQuery{}); client.Code(err) != "too_many_streams" || client.StatusCode(err) != http.StatusTooManyRequests {
		t.Errorf("over the limit: %v, want 429 too_many_streams", err)
	}
	if _, err := c.StreamSandboxEvents(ctx, "nope", client.EventQuery{}); !client.IsNotFound(err) {
		t.Errorf("unknown sandbox: %v, want sandbox_not_found", err)
	}
	if _, err := c.StreamSandboxEvents(ctx, "json", client.EventQuery{}); err == nil {
		t.Error("a JSON page was taken for a stream")
	}
}

// TestStreamEventsClose: Close, or the context, ends a Next blocked on an
// idle stream.
func TestStreamEventsClose(t *testing.T) {
	ev := api.Event{ID: "e1", Type: api.EventSandboxCreated, Message: "m", CreatedAt: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}
	reqs := make(chan streamRequest, 10)
	c := client.New(newStreamServer(t, []api.Event{ev}, true, reqs), testKey)

	st, err := c.StreamEvents(t.Context(), client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.Next(); err != nil || got.ID != "e1" {
		t.Fatalf("first event %+v, %v", got, err)
	}
	done := make(chan error, 1)
	go func() { _, err := st.Next(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	st.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Next returned an event after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a blocked Next")
	}
	if st.LastID() != "e1" {
		t.Fatalf("LastID = %q after Close", st.LastID())
	}

	ctx, cancel := context.WithCancel(t.Context())
	st, err = c.StreamEvents(ctx, client.EventQuery{After: st.LastID()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Next()
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := st.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v, want context.Canceled", err)
	}
}
