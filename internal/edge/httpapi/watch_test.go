package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/hutchdev/hutch/api"
)

func TestRelayWatch(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		wait time.Duration
		ev   api.WatchEvent
		err  error
	}{
		{ev: api.WatchEvent{Type: api.WatchCreate, Path: "a/b", Time: at}},
		{wait: 100 * time.Millisecond, ev: api.WatchEvent{Type: "bogus\nevent: create", Path: "x", Time: at}},
		{ev: api.WatchEvent{Type: api.WatchRename, Path: "c", OldPath: "a", IsDir: true, Time: at}},
		{err: io.EOF},
	}
	next := func() (api.WatchEvent, error) {
		s := steps[0]
		steps = steps[1:]
		time.Sleep(s.wait)
		return s.ev, s.err
	}
	a := &API{cfg: Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	rec := httptest.NewRecorder()
	sse, err := newSSE(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.relayWatch(context.Background(), sse, funcStream[api.WatchEvent](next), 20*time.Millisecond); err != io.EOF {
		t.Fatalf("relayWatch = %v, want io.EOF", err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	body := rec.Body.String()
	create := "event: create\ndata: {\"type\":\"create\",\"path\":\"a/b\",\"time\":\"2025-06-01T12:00:00Z\"}\n\n"
	rename := "event: rename\ndata: {\"type\":\"rename\",\"path\":\"c\",\"old_path\":\"a\",\"is_dir\":true,\"time\":\"2025-06-01T12:00:00Z\"}\n\n"
	i, j := strings.Index(body, create), strings.Index(body, rename)
	if i != 0 || j < 0 || !strings.Contains(body[i:j], ": keep-alive\n\n") {
		t.Errorf("stream %q: want the create event, a heartbeat while idle, then the rename", body)
	}
	if strings.Contains(body, "bogus") || strings.Count(body, "event: ") != 2 {
		t.Errorf("an event of an unknown type was relayed: %q", body)
	}

	// A cancelled request ends the relay even while next waits.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	block := make(chan struct{})
	defer close(block)
	err = a.relayWatch(ctx, sse, funcStream[api.WatchEvent](func() (api.WatchEvent, error) { <-block; return api.WatchEvent{}, io.EOF }), time.Hour)
	if err != context.Canceled {
		t.Fatalf("relayWatch with a cancelled context = %v", err)
	}
}

// funcStream is a sandbox.Stream of a function's results.
type funcStream[T any] func() (T, error)

func (f funcStream[T]) Next() (T, error) { return f() }
func (f funcStream[T]) Close() error     { return nil }

// TestWatchEventSchema holds the WatchEvent schema to api.WatchEvent, as
// TestSchemasMatchWireTypes does for the other types.
func TestWatchEventSchema(t *testing.T) {
	b, err := os.ReadFile("../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `yaml:"enum"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	s, ok := spec.Components.Schemas["WatchEvent"]
	if !ok {
		t.Fatal("schema WatchEvent is missing")
	}
	var inSpec, inGo []string
	for p := range s.Properties {
		inSpec = append(inSpec, p)
	}
	rt := reflect.TypeOf(api.WatchEvent{})
	for i := 0; i < rt.NumField(); i++ {
		if tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			inGo = append(inGo, tag)
		}
	}
	sort.Strings(inSpec)
	sort.Strings(inGo)
	if diff := cmp.Diff(inSpec, inGo); diff != "" {
		t.Errorf("schema WatchEvent (-) and api.WatchEvent (+) disagree:\n%s", diff)
	}
	want := []string{api.WatchCreate, api.WatchWrite, api.WatchRemove, api.WatchRename, api.WatchOverflow}
	if diff := cmp.Diff(want, s.Properties["type"].Enum); diff != "" {
		t.Errorf("WatchEvent.type enum (-api +spec):\n%s", diff)
	}
	// The wire form is what the schema says: a time, and no empty fields.
	j, _ := json.Marshal(api.WatchEvent{Type: api.WatchOverflow})
	if string(j) != `{"type":"overflow","time":"0001-01-01T00:00:00Z"}` {
		t.Errorf("an empty overflow event encodes as %s", j)
	}
}
