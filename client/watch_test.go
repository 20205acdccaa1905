package client_test

import (
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

func TestWatchFiles(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	evs := []api.WatchEvent{
		{Type: api.WatchCreate, Path: "src/a.go", Time: at},
		{Type: api.WatchRename, Path: "b", OldPath: "a", IsDir: true, Time: at},
		{Type: api.WatchOverflow, Time: at},
	}
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/sandboxes/missing/files/watch":
			writeError(w, http.StatusNotFound, "sandbox_not_found", "no sandbox missing")
			return
		case r.URL.Path == "/v1/sandboxes/json/files/watch":
			writeJSON(w, http.StatusOK, evs)
			return
		case r.URL.Path != "/v1/sandboxes/s1/files/watch" || r.Header.Get("Accept") != "text/event-stream" ||
			r.Header.Get("Authorization") != "Bearer "+testKey:
			t.Errorf("request %s %s, Accept %q", r.Method, r.URL, r.Header.Get("Accept"))
		}
		want := "path=src&recursive=true"
		if r.URL.Query().Get("recursive") == "" {
			want = "path=src"
		}
		if r.URL.RawQuery != want {
			t.Errorf("query %q, want %q", r.URL.RawQuery, want)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range evs {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, ": keep-alive\n\nevent: %s\ndata: %s\n\n", e.Type, b)
		}
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("recursive") == "" {
			select {
			case <-r.Context().Done():
			case <-hold:
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hold) })
	c := client.New(srv.URL, testKey)
	ctx := t.Context()

	w, err := c.WatchFiles(ctx, "s1", "src", true)
	if err != nil {
		t.Fatal(err)
	}
	var got []api.WatchEvent
	for {
		ev, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if diff := cmp.Diff(evs, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if _, err := w.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end: %v", err)
	}
	w.Close()

	// Close ends a Next that waits.
	w, err = c.WatchFiles(ctx, "s1", "src", false)
	if err != nil {
		t.Fatal(err)
	}
	for range evs {
		if _, err := w.Next(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := w.Next(); done <- err }()
	time.Sleep(50 * time.Millisecond)
	w.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Next after Close returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a waiting Next")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	if _, err := c.WatchFiles(ctx, "missing", "src", true); !client.IsNotFound(err) || client.Code(err) != "sandbox_not_found" {
		t.Errorf("unknown sandbox: %v", err)
	}
	if _, err := c.WatchFiles(ctx, "json", "src", true); err == nil {
		t.Error("a JSON answer was taken for an event stream")
	}
	if _, err := c.WatchFiles(ctx, "", "src", true); err == nil {
		t.Error("no sandbox id: no error")
	}
}
