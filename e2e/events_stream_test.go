package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// liveWithin is how soon a followed event must arrive: well under the
// streams' 5 s safety poll, so only the server's wake can deliver it.
const liveWithin = 2 * time.Second

// follow reads st in the background; events arrive on the channel, and
// the error that ended it on the other.
func follow(st *client.EventStream) (<-chan api.Event, <-chan error) {
	evs, errc := make(chan api.Event, 100), make(chan error, 1)
	go func() {
		for {
			e, err := st.Next()
			if err != nil {
				errc <- err
				return
			}
			evs <- e
		}
	}()
	return evs, errc
}

// expectEvent waits up to d for the next event and checks its type and
// sandbox.
func expectEvent(t *testing.T, evs <-chan api.Event, typ, sandboxID string, d time.Duration) api.Event {
	t.Helper()
	select {
	case e := <-evs:
		if e.Type != typ || e.SandboxID != sandboxID {
			t.Fatalf("event %s about %q, want %s about %s", e.Type, e.SandboxID, typ, sandboxID)
		}
		return e
	case <-time.After(d):
		t.Fatalf("no %s event within %v", typ, d)
	}
	return api.Event{}
}

// expectNoEvent fails if an event arrives within d.
func expectNoEvent(t *testing.T, evs <-chan api.Event, d time.Duration) {
	t.Helper()
	select {
	case e := <-evs:
		t.Fatalf("unexpected event %s %s", e.ID, e.Type)
	case <-time.After(d):
	}
}

// TestEventStream: a stream followed while a sandbox is created, stopped,
// started and destroyed gets the four events live; reconnecting after the
// last of them repeats none; another tenant's stream sees nothing; and a
// server stopping ends its streams rather than waiting for them.
func TestEventStream(t *testing.T) {
	s := startServer(t, "")
	ctx := t.Context()
	admin := s.client()
	acme, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(s.url, acme.Key.Secret)

	st, err := c.StreamEvents(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, _ := follow(st)
	otherSt, err := admin.StreamEvents(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer otherSt.Close()
	otherEvs, _ := follow(otherSt)

	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first := expectEvent(t, evs, api.EventSandboxCreated, sb.ID, liveWithin)
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, evs, api.EventSandboxStopped, sb.ID, liveWithin)
	if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, evs, api.EventSandboxStarted, sb.ID, liveWithin)
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	last := expectEvent(t, evs, api.EventSandboxDestroyed, sb.ID, liveWithin)
	if st.LastID() != last.ID {
		t.Fatalf("LastID %s, want the destroyed event's %s", st.LastID(), last.ID)
	}
	expectNoEvent(t, otherEvs, 100*time.Millisecond)
	st.Close()

	// Reconnecting after the last event sees nothing again; after the
	// first, exactly the three that followed.
	again, err := c.StreamSandboxEvents(ctx, sb.ID, client.EventQuery{After: last.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	againEvs, _ := follow(again)
	expectNoEvent(t, againEvs, time.Second)
	rest, err := c.StreamSandboxEvents(ctx, sb.ID, client.EventQuery{After: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer rest.Close()
	restEvs, restErr := follow(rest)
	for _, typ := range []string{api.EventSandboxStopped, api.EventSandboxStarted, api.EventSandboxDestroyed} {
		expectEvent(t, restEvs, typ, sb.ID, liveWithin)
	}
	expectNoEvent(t, restEvs, 200*time.Millisecond)

	if _, err := c.StreamEvents(ctx, client.EventQuery{After: "not-an-id"}); client.Code(err) != "invalid_cursor" {
		t.Errorf("Last-Event-ID not-an-id: %v, want invalid_cursor", err)
	}
	if _, err := admin.StreamSandboxEvents(ctx, sb.ID, client.EventQuery{}); client.Code(err) != "sandbox_not_found" {
		t.Errorf("another tenant's sandbox stream: %v, want sandbox_not_found", err)
	}

	// Stopping the server ends the open streams at once.
	start := time.Now()
	s.stop(false)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hutch serve took %v to stop with streams open", d)
	}
	select {
	case err := <-restErr:
		if !errors.Is(err, io.EOF) {
			t.Errorf("stream ended with %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stream outlived its server")
	}
}

// TestEventsCLI: hutch events lists a sandbox's log; -f --json follows it.
func TestEventsCLI(t *testing.T) {
	s := startServer(t, "")
	ctx := t.Context()
	c := s.client()

	cmd := exec.Command(filepath.Join(binDir, "hutch"), "events", "-f", "--json", "--type", api.EventSandboxCreated, "--type", api.EventSandboxDestroyed)
	cmd.Env = append(os.Environ(), "HUTCH_URL="+s.url, "HUTCH_API_KEY="+s.key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil { // filtered out
		t.Fatal(err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	expectLine := func(want, sandboxID string, d time.Duration) {
		t.Helper()
		select {
		case line := <-lines:
			var e api.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Type != want || e.SandboxID != sandboxID {
				t.Fatalf("line %q (%v), want a %s event of %s", line, err, want, sandboxID)
			}
		case <-time.After(d):
			t.Fatalf("hutch events -f printed no %s event; stderr: %s", want, stderr.String())
		}
	}
	expectLine(api.EventSandboxCreated, sb.ID, 5*time.Second)
	expectLine(api.EventSandboxDestroyed, sb.ID, 5*time.Second)

	// The server restarts on the same address: -f reconnects after the
	// last event it printed, so the next one comes and nothing repeats.
	s.stop(false)
	s = startServer(t, s.dataDir, "--listen", strings.TrimPrefix(s.url, "http://"))
	sb2, err := s.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	expectLine(api.EventSandboxCreated, sb2.ID, 20*time.Second)
	if !strings.Contains(stderr.String(), "reconnecting") {
		t.Errorf("stderr %q does not say the stream was lost", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("hutch events -f after SIGINT: %v, want exit 130; stderr: %s", err, stderr.String())
	}

	// Without -f: the whole log, one line each, and it ends.
	stdout, errOut, code := s.cli("", "events", "--sandbox", sb.ID)
	if code != 0 {
		t.Fatalf("hutch events: %d %s", code, errOut)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[2] != sb.ID {
			t.Fatalf("line %q: want time, type, sandbox, message", line)
		}
		types = append(types, f[1])
	}
	want := []string{api.EventSandboxCreated, api.EventSandboxStopped, api.EventSandboxDestroyed}
	if !slices.Equal(types, want) {
		t.Fatalf("hutch events --sandbox: %v, want %v\n%s", types, want, stdout)
	}
	if _, errOut, code := s.cli("", "events", "--sandbox", "nope"); code != 1 || !strings.Contains(errOut, "sandbox_not_found") {
		t.Errorf("unknown sandbox: %d %q", code, errOut)
	}
}
