package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// openStreams opens one stream of every kind on sandbox id with c: exec
// output, a run-to-completion exec, process output, a wait, a file watch,
// the tenant's and the sandbox's event streams, a new terminal and one
// attached to a running process. Each reports on the channel under its
// name when it ends.
func openStreams(t *testing.T, f *apiFixture, c *client.Client, id string) map[string]chan error {
	t.Helper()
	ctx := f.ctx
	p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	streams := map[string]func() error{}
	exec, err := c.ExecStream(ctx, id, api.ExecRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	streams["exec stream"] = func() error {
		for {
			if _, err := exec.Next(); err != nil {
				return err
			}
		}
	}
	streams["exec"] = func() error {
		_, err := c.Exec(ctx, id, api.ExecRequest{Cmd: []string{"sleep", "60"}})
		return err
	}
	streams["wait"] = func() error {
		_, err := c.WaitProcess(ctx, id, p.PID, time.Minute)
		return err
	}
	out, err := c.ProcessOutput(ctx, id, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	streams["process output"] = func() error {
		for {
			if _, err := out.Next(); err != nil {
				return err
			}
		}
	}
	w, err := c.WatchFiles(ctx, id, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	streams["watch"] = func() error {
		for {
			if _, err := w.Next(); err != nil {
				return err
			}
		}
	}
	for name, open := range map[string]func() (*client.EventStream, error){
		"events":         func() (*client.EventStream, error) { return c.StreamEvents(ctx, client.EventQuery{}) },
		"sandbox events": func() (*client.EventStream, error) { return c.StreamSandboxEvents(ctx, id, client.EventQuery{}) },
	} {
		es, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { es.Close() })
		streams[name] = func() error {
			for {
				if _, err := es.Next(); err != nil {
					return err
				}
			}
		}
	}
	for name, open := range map[string]func() (*client.Terminal, error){
		"terminal": func() (*client.Terminal, error) {
			return c.OpenTerminal(ctx, id, client.TerminalOptions{Cmd: []string{"sleep", "60"}})
		},
		"attach terminal": func() (*client.Terminal, error) { return c.AttachTerminal(ctx, id, p.PID, 0) },
	} {
		term, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { term.Close() })
		streams[name] = func() error {
			for {
				if _, err := term.Next(ctx); err != nil {
					return err
				}
			}
		}
	}
	ended := map[string]chan error{}
	for name, next := range streams {
		ch := make(chan error, 1)
		ended[name] = ch
		go func() { ch <- next() }()
	}
	return ended
}

// TestRevokeEndsStreams: revoking a key ends every stream and WebSocket it
// opened, and those of the keys revoked with it; another key's go on.
func TestRevokeEndsStreams(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	revokedID, revoked := f.keyOf(t, f.keyA, "revoked", api.RoleMember)
	_, child := f.keyOf(t, revoked, "child", api.RoleMember)

	kept := openStreams(t, f, f.ca, id)
	gone := openStreams(t, f, client.New(f.srv.URL, revoked), id)
	goneChild := openStreams(t, f, client.New(f.srv.URL, child), id)
	// Let every stream reach the server before the revocation.
	time.Sleep(300 * time.Millisecond)
	for name, ch := range kept {
		select {
		case err := <-ch:
			t.Fatalf("%s ended before the revocation: %v", name, err)
		default:
		}
	}

	if status, code := f.rawAs(t, f.keyA, "DELETE", "/v1/keys/"+revokedID+"?cascade=true", "", nil); status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", status, code)
	}
	// A generous deadline: it detects a hang; the streams end at once.
	deadline := time.Now().Add(10 * time.Second)
	for who, streams := range map[string]map[string]chan error{"the revoked key": gone, "the key it made": goneChild} {
		for name, ch := range streams {
			select {
			case <-ch:
			case <-time.After(time.Until(deadline)):
				t.Errorf("%s of %s outlived its revocation", name, who)
			}
		}
	}

	// The other key's streams go on: none has ended, and its event stream
	// still delivers.
	for name, ch := range kept {
		select {
		case err := <-ch:
			t.Errorf("%s of a key that was not revoked ended: %v", name, err)
		default:
		}
	}
	es, err := f.ca.StreamEvents(f.ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	sb := f.sandbox(t)
	for {
		ev, err := es.Next()
		if err != nil {
			t.Fatalf("the kept key's event stream after the revocation: %v", err)
		}
		if ev.SandboxID == sb.ID {
			break
		}
	}
	if _, err := f.ca.Exec(f.ctx, id, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Errorf("the kept key after the revocation: %v", err)
	}
}
