package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/store"
)

// streamFixture is the API fixture with sandboxes recorded straight in
// the store: two of tenant a's, one of b's.
type streamFixture struct {
	*apiFixture
	sbA, sbA2 string // A's sandboxes
	sbB       string
}

func newStreamFixture(t *testing.T) *streamFixture {
	t.Helper()
	f := &streamFixture{apiFixture: newAPIFixture(t)}
	sys := tenancy.System(context.Background())
	sb := func(tenantID string) string {
		sb := &store.Sandbox{TenantID: tenantID, State: api.StateRunning, Template: "host", Driver: "fake"}
		if err := f.st.CreateSandbox(sys, sb); err != nil {
			t.Fatal(err)
		}
		return sb.ID
	}
	f.sbA, f.sbA2, f.sbB = sb(f.a), sb(f.a), sb(f.b)
	return f
}

// setVar sets a tunable for one test.
func setVar[T any](t *testing.T, v *T, to T) {
	old := *v
	*v = to
	t.Cleanup(func() { *v = old })
}

// appendEvent records an event of tenantID through the service, which
// wakes the tenant's streams, or, with quiet, through the store alone, as
// another replica would.
func (f *streamFixture) appendEvent(t *testing.T, tenantID, sandboxID, typ string, quiet bool) string {
	t.Helper()
	e := events.Event{TenantID: tenantID, SandboxID: sandboxID, Type: typ, Message: typ + " happened"}
	ctx := tenancy.System(context.Background())
	var err error
	if quiet {
		rec := store.Event(e)
		err = f.st.AppendEvent(ctx, &rec)
		e.ID = rec.ID
	} else {
		err = f.events.AppendEvent(ctx, &e)
	}
	if err != nil {
		t.Error(err)
	}
	return e.ID
}

// allIDs lists every event of tenantID as the list route would.
func (f *streamFixture) allIDs(t *testing.T, tenantID string, q store.EventQuery) []string {
	t.Helper()
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tenantID, Role: api.RoleMember})
	var out []string
	for {
		evs, next, err := f.st.ListEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			out = append(out, e.ID)
		}
		if next == "" {
			return out
		}
		q.After = next
	}
}

// sseFrame is one frame of a raw stream: an event, or a comment.
type sseFrame struct {
	id, typ, data string
	comment       string
}

// rawStream is a stream read frame by frame, comments included.
type rawStream struct {
	resp   *http.Response
	frames chan sseFrame
	err    chan error
}

// open sends GET path as an event stream with key and, when set, a
// Last-Event-ID. It returns the response for a non-200 answer.
func (f *streamFixture) open(t *testing.T, key, path, lastID string) (*rawStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Cleanup(cancel)
		return nil, resp
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	s := &rawStream{resp: resp, frames: make(chan sseFrame, 1024), err: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var fr sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				s.frames <- fr
				fr = sseFrame{}
			case strings.HasPrefix(line, ":"):
				fr.comment = strings.TrimSpace(line[1:])
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					fr.id = v
				case "event":
					fr.typ = v
				case "data":
					fr.data = v
				}
			}
		}
		s.err <- errors.Join(sc.Err(), io.EOF)
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s, nil
}

// close disconnects the client.
func (s *rawStream) close() { s.resp.Body.Close() }

// next returns the next event, skipping heartbeats, within a deadline.
func (s *rawStream) next(t *testing.T) (sseFrame, api.Event) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case fr := <-s.frames:
			if fr.comment != "" {
				continue
			}
			var e api.Event
			if err := json.Unmarshal([]byte(fr.data), &e); err != nil {
				t.Fatalf("data %q: %v", fr.data, err)
			}
			if fr.id != e.ID || fr.typ != e.Type {
				t.Fatalf("frame id %q event %q carries event %s of type %s", fr.id, fr.typ, e.ID, e.Type)
			}
			return fr, e
		case err := <-s.err:
			t.Fatalf("stream ended: %v", err)
		case <-timeout:
			t.Fatal("no event within 5 s")
		}
	}
}

// ids reads n events and returns their ids.
func (s *rawStream) ids(t *testing.T, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for range n {
		_, e := s.next(t)
		out = append(out, e.ID)
	}
	return out
}

// quiet fails if an event arrives within d.
func (s *rawStream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case fr := <-s.frames:
			if fr.comment == "" {
				t.Fatalf("unexpected event %s %s", fr.id, fr.typ)
			}
		case <-timeout:
			return
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestEventStreamCatchUpThenTail: a stream sends what is stored, then what
// is appended, in id order, with nothing missed or repeated even while
// another goroutine appends throughout the catch-up, both with wakes and
// without them (another replica).
func TestEventStreamCatchUpThenTail(t *testing.T) {
	setVar(t, &eventStreamPoll, 20*time.Millisecond)
	f := newStreamFixture(t)
	const stored, live, quiet = 350, 300, 50 // more than three pages stored
	for i := range stored {
		f.appendEvent(t, f.a, []string{f.sbA, f.sbA2, ""}[i%3], api.EventSandboxStarted, i%2 == 0)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() {
		<-start
		for i := range live + quiet {
			f.appendEvent(t, f.a, f.sbA, api.EventSandboxStopped, i%7 == 0 || i >= live)
			if i%50 == 0 {
				f.appendEvent(t, f.b, f.sbB, api.EventSandboxStopped, false) // another tenant's, interleaved
			}
		}
	})
	close(start)
	s, resp := f.open(t, f.keyA, "/v1/events", "")
	if resp != nil {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := s.ids(t, stored+live+quiet)
	wg.Wait()
	want := f.allIDs(t, f.a, store.EventQuery{})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("streamed ids (+) differ from the stored log (-):\n%s", diff)
	}
	if !slices.IsSorted(got) {
		t.Fatal("ids not in order")
	}
	s.quiet(t, 100*time.Millisecond)
}

// TestEventStreamResume: reconnecting with Last-Event-ID (or after=, the
// header winning) gives exactly the events missed while away.
func TestEventStreamResume(t *testing.T) {
	setVar(t, &eventStreamPoll, time.Hour) // live events come by wakes alone
	f := newStreamFixture(t)
	var first []string
	for range 3 {
		first = append(first, f.appendEvent(t, f.a, f.sbA, api.EventSandboxCreated, false))
	}
	s, _ := f.open(t, f.keyA, "/v1/events", "")
	if got := s.ids(t, 3); !slices.Equal(got, first) {
		t.Fatalf("first connection: %v, want %v", got, first)
	}
	last := first[2]
	s.close()
	var missed []string
	for range 4 {
		missed = append(missed, f.appendEvent(t, f.a, f.sbA, api.EventSandboxStopped, false))
	}
	s2, _ := f.open(t, f.keyA, "/v1/events", last)
	if got := s2.ids(t, 4); !slices.Equal(got, missed) {
		t.Fatalf("resumed: %v, want %v", got, missed)
	}
	s2.quiet(t, 50*time.Millisecond)
	newer := f.appendEvent(t, f.a, f.sbA, api.EventSandboxStarted, false)
	if got := s2.ids(t, 1); got[0] != newer {
		t.Fatalf("live after resume: %v, want %s", got, newer)
	}

	// after= works as the cursor too; the header wins over it.
	s3, _ := f.open(t, f.keyA, "/v1/events?after="+first[0], "")
	if got := s3.ids(t, 2); !slices.Equal(got, first[1:]) {
		t.Fatalf("after=: %v, want %v", got, first[1:])
	}
	s4, _ := f.open(t, f.keyA, "/v1/events?after="+first[0], missed[3])
	if got := s4.ids(t, 1); got[0] != newer {
		t.Fatalf("after= and Last-Event-ID: %v, want %s (the header's)", got, newer)
	}
}

// TestEventStreamFilters: a sandbox's stream sees only that sandbox, a
// type filter only its types, and another tenant's stream nothing of this
// tenant's.
func TestEventStreamFilters(t *testing.T) {
	setVar(t, &eventStreamPoll, time.Hour) // live events come by wakes alone
	f := newStreamFixture(t)
	before := f.appendEvent(t, f.a, f.sbA, api.EventSandboxCreated, false)
	sb, _ := f.open(t, f.keyA, "/v1/sandboxes/"+f.sbA+"/events", "")
	byType, _ := f.open(t, f.keyA, "/v1/events?type="+api.EventSandboxOOM+"&type="+api.EventProcessExited, "")
	bySandboxParam, _ := f.open(t, f.keyA, "/v1/events?sandbox="+f.sbA2, "")
	other, _ := f.open(t, f.keyB, "/v1/events", "")
	otherAfterA, _ := f.open(t, f.keyB, "/v1/events", before)
	waitFor(t, "five streams", func() bool {
		return f.events.Notifier().Streams(f.a) == 3 && f.events.Notifier().Streams(f.b) == 2
	})

	var mine, oom, ofA2 []string
	mine = append(mine, before)
	for i := range 12 {
		switch i % 4 {
		case 0:
			mine = append(mine, f.appendEvent(t, f.a, f.sbA, api.EventSandboxStopped, false))
		case 1:
			oom = append(oom, f.appendEvent(t, f.a, f.sbA2, api.EventSandboxOOM, false))
			ofA2 = append(ofA2, oom[len(oom)-1])
		case 2:
			f.appendEvent(t, f.a, "", api.EventSandboxStarted, false)
		case 3:
			id := f.appendEvent(t, f.a, f.sbA, api.EventProcessExited, false)
			mine = append(mine, id)
			oom = append(oom, id)
		}
	}
	bEvent := f.appendEvent(t, f.b, f.sbB, api.EventSandboxCreated, false)

	if got := sb.ids(t, len(mine)); !slices.Equal(got, mine) {
		t.Errorf("sandbox stream: %v, want %v", got, mine)
	}
	if got := byType.ids(t, len(oom)); !slices.Equal(got, oom) {
		t.Errorf("type stream: %v, want %v", got, oom)
	}
	if got := bySandboxParam.ids(t, len(ofA2)); !slices.Equal(got, ofA2) {
		t.Errorf("sandbox= stream: %v, want %v", got, ofA2)
	}
	// B's streams see B's event first: none of A's came before it.
	for name, s := range map[string]*rawStream{"other tenant": other, "other tenant after A's id": otherAfterA} {
		if got := s.ids(t, 1); got[0] != bEvent {
			t.Errorf("%s: first event %s, want B's %s", name, got[0], bEvent)
		}
		s.quiet(t, 30*time.Millisecond)
	}
	sb.quiet(t, 30*time.Millisecond)
}

// TestEventStreamErrors: what is refused is refused before the stream
// starts, as JSON.
func TestEventStreamErrors(t *testing.T) {
	f := newStreamFixture(t)
	two := 2
	if _, err := f.st.SetTenantQuotas(tenancy.System(context.Background()), f.a, api.Quotas{Streams: &two}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key, path, lastID string
		status                  int
		code                    string
	}{
		{"bad Last-Event-ID", f.keyA, "/v1/events", "not-an-id", 400, "invalid_cursor"},
		{"bad Last-Event-ID, sandbox", f.keyA, "/v1/sandboxes/" + f.sbA + "/events", "01234", 400, "invalid_cursor"},
		{"bad after", f.keyA, "/v1/events?after=nope", "", 400, "invalid_cursor"},
		{"bad type", f.keyA, "/v1/events?type=", "", 400, "invalid_request"},
		{"unknown sandbox", f.keyA, "/v1/sandboxes/nope/events", "", 404, "sandbox_not_found"},
		{"another tenant's sandbox", f.keyB, "/v1/sandboxes/" + f.sbA + "/events", "", 404, "sandbox_not_found"},
		{"no key", "nope", "/v1/events", "", 401, "invalid_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp := f.open(t, tt.key, tt.path, tt.lastID)
			if resp == nil {
				t.Fatal("the stream started")
			}
			defer resp.Body.Close()
			var body api.Error
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || body.Error.Code != tt.code {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body.Error.Code, tt.status, tt.code)
			}
		})
	}
	if t.Failed() {
		return
	}

	t.Run("too many streams", func(t *testing.T) {
		f.open(t, f.keyA, "/v1/events", "")
		s2, _ := f.open(t, f.keyA, "/v1/sandboxes/"+f.sbA+"/events", "")
		_, resp := f.open(t, f.keyA, "/v1/events", "")
		if resp == nil {
			t.Fatal("a third stream started")
		}
		var body api.Error
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "quota_exceeded" || !strings.Contains(body.Error.Message, "quota streams") ||
			resp.Header.Get("Retry-After") == "" {
			t.Fatalf("third stream: %d %+v, Retry-After %q; want 429 quota_exceeded naming streams", resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		if s, resp := f.open(t, f.keyB, "/v1/events", ""); s == nil { // B has its own
			t.Fatalf("B's stream: %d", resp.StatusCode)
		}
		// A page is no stream.
		if status, b := (&eventsFixture{url: f.srv.URL}).get(t, f.keyA, "/v1/events"); status != 200 {
			t.Fatalf("a page while at the limit: %d %s", status, b)
		}
		s2.close()
		waitFor(t, "a slot", func() bool { return f.events.Notifier().Streams(f.a) == 1 })
		if _, resp := f.open(t, f.keyA, "/v1/events", ""); resp != nil {
			t.Fatalf("after one closed: %d", resp.StatusCode)
		}
	})
}

// TestEventStreamHeartbeat: an idle stream sends comment lines.
func TestEventStreamHeartbeat(t *testing.T) {
	setVar(t, &eventStreamHeartbeat, 20*time.Millisecond)
	setVar(t, &eventStreamPoll, time.Hour)
	f := newStreamFixture(t)
	s, _ := f.open(t, f.keyA, "/v1/events", "")
	beats := 0
	timeout := time.After(5 * time.Second)
	for beats < 3 {
		select {
		case fr := <-s.frames:
			if fr.comment != "keep-alive" || fr.id != "" || fr.data != "" {
				t.Fatalf("frame %+v, want a heartbeat", fr)
			}
			beats++
		case <-timeout:
			t.Fatalf("%d heartbeats in 5 s", beats)
		}
	}
	id := f.appendEvent(t, f.a, f.sbA, api.EventSandboxStopped, false)
	if _, e := s.next(t); e.ID != id {
		t.Fatalf("event %s, want %s", e.ID, id)
	}
}

// TestEventStreamEndsWithItsClient: a client that goes away frees its
// stream at once, and a server draining (its base context cancelled, as
// hutch serve's shutdown does first) ends its streams.
func TestEventStreamEndsWithItsClient(t *testing.T) {
	f := newStreamFixture(t)
	n := f.events.Notifier()
	var streams []*rawStream
	for range 3 {
		s, _ := f.open(t, f.keyA, "/v1/events", "")
		streams = append(streams, s)
	}
	waitFor(t, "three streams", func() bool { return n.Streams(f.a) == 3 })
	for i, s := range streams {
		s.close()
		waitFor(t, fmt.Sprintf("%d streams", 2-i), func() bool { return n.Streams(f.a) == 2-i })
	}

	s, _ := f.open(t, f.keyA, "/v1/events", "")
	waitFor(t, "a stream", func() bool { return n.Streams(f.a) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f.drain()
	if err := f.srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stream open: %v", err)
	}
	select {
	case err := <-s.err:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("stream ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived its server")
	}
	if got := n.Streams(f.a); got != 0 {
		t.Fatalf("%d streams left after shutdown", got)
	}
}

// TestEventStreamWithoutService: an API without a sandbox service (the
// event routes alone), over an event log no append goes through, still
// streams, reading the store on its timer.
func TestEventStreamWithoutService(t *testing.T) {
	setVar(t, &eventStreamPoll, 20*time.Millisecond)
	f := newStreamFixture(t)
	log := slog.New(slog.DiscardHandler)
	srv := httptest.NewServer(New(Config{Events: events.New(f.st, events.Config{}), Auth: &auth.Authenticator{Store: f.st}, Log: log}))
	t.Cleanup(srv.Close)
	f.srv = srv
	s, _ := f.open(t, f.keyA, "/v1/events", "")
	id := f.appendEvent(t, f.a, f.sbA, api.EventSandboxStopped, true)
	if got := s.ids(t, 1); got[0] != id {
		t.Fatalf("event %s, want %s", got[0], id)
	}
}
