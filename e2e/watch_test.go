package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestWatch: a recursive file watch through the whole stack, under each
// driver (the namespace driver's agent watches an overlay as the sandbox's
// user; the process driver's is under Landlock): create, write, rename,
// remove with relative paths, a new directory followed, a burst of 1,000
// files, the end of the watch when its directory goes, the CLI.
func TestWatch(t *testing.T) {
	for _, drv := range []string{"namespace", "process"} {
		t.Run(drv, func(t *testing.T) { testWatch(t, drv) })
	}
}

// watchEvents reads a watch into a channel; the error that ended it
// follows on end.
func watchEvents(w *client.Watch) (<-chan api.WatchEvent, <-chan error) {
	evs, end := make(chan api.WatchEvent, 10000), make(chan error, 1)
	go func() {
		defer close(evs)
		for {
			ev, err := w.Next()
			if err != nil {
				end <- err
				return
			}
			evs <- ev
		}
	}()
	return evs, end
}

// watchSettle returns the events that come until none has for quiet, with
// their times checked and cleared.
func watchSettle(t *testing.T, evs <-chan api.WatchEvent, quiet time.Duration) []api.WatchEvent {
	t.Helper()
	var got []api.WatchEvent
	guard := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				return got
			}
			if ev.Time.IsZero() || time.Since(ev.Time) > time.Minute || ev.Time.After(time.Now().Add(time.Minute)) {
				t.Errorf("event %+v: time is not now", ev)
			}
			ev.Time = time.Time{}
			got = append(got, ev)
		case <-time.After(quiet):
			return got
		case <-guard:
			t.Fatalf("the watch never went quiet; %d events so far", len(got))
		}
	}
}

func testWatch(t *testing.T, driver string) {
	s := startServer(t, "", "--driver", driver)
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sh := func(script string) {
		t.Helper()
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", script}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v, %v", script, res, err)
		}
	}
	sh("mkdir -p w/old")

	// Errors come before the stream, through the API's error answers.
	for _, tc := range []struct{ id, path, code string }{
		{"nosuchsandbox", "w", "sandbox_not_found"},
		{sb.ID, "missing", "file_not_found"},
		{sb.ID, "../..", "invalid_path"},
		{sb.ID, "w/old/../..", "invalid_path"},
	} {
		if _, err := c.WatchFiles(ctx, tc.id, tc.path, true); client.Code(err) != tc.code {
			t.Errorf("watch %s:%s: %v, want %s", tc.id, tc.path, err, tc.code)
		}
	}
	// recursive must be a boolean: the one error writer says so.
	resp := s.do("GET", "/v1/sandboxes/"+sb.ID+"/files/watch?path=w&recursive=maybe", "", nil)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request"`) {
		t.Errorf("recursive=maybe: %d %s", resp.StatusCode, b)
	}
	resp.Body.Close()

	w, err := c.WatchFiles(ctx, sb.ID, "w", true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	evs, end := watchEvents(w)
	const quiet = 500 * time.Millisecond
	check := func(what, script string, want ...api.WatchEvent) {
		t.Helper()
		sh(script)
		if diff := cmp.Diff(want, watchSettle(t, evs, quiet)); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", what, diff)
		}
	}
	check("a file below a directory there before", "echo hi > w/old/a",
		api.WatchEvent{Type: api.WatchCreate, Path: "old/a"})
	check("a new directory and a file in it at once", "mkdir w/sub && echo hi > w/sub/a",
		api.WatchEvent{Type: api.WatchCreate, Path: "sub", IsDir: true}, api.WatchEvent{Type: api.WatchCreate, Path: "sub/a"})
	check("rename", "mv w/sub/a w/sub/b",
		api.WatchEvent{Type: api.WatchRename, Path: "sub/b", OldPath: "sub/a"})
	check("writes", "for i in 1 2 3 4 5; do echo $i >> w/sub/b; done",
		api.WatchEvent{Type: api.WatchWrite, Path: "sub/b"})
	check("remove", "rm w/sub/b",
		api.WatchEvent{Type: api.WatchRemove, Path: "sub/b"})
	check("a link is reported, not followed", "mkdir out && ln -s ../../out w/sub/out && touch w/sub/out/x",
		api.WatchEvent{Type: api.WatchCreate, Path: "sub/out"})

	// The test: 1,000 files made quickly are 1,000 create events,
	// in order, or an overflow event. A file's write is coalesced into its
	// waiting create; one that came after its create was sent is allowed.
	sh("cd w/sub && for i in $(seq 1000); do : > f$i; done")
	var creates []string
	overflow := false
	for _, ev := range watchSettle(t, evs, quiet) {
		switch {
		case ev.Type == api.WatchOverflow:
			overflow = true
		case ev.Type == api.WatchCreate && !ev.IsDir:
			creates = append(creates, ev.Path)
		case ev.Type == api.WatchWrite && len(creates) > 0 && ev.Path == creates[len(creates)-1]:
		default:
			t.Errorf("burst: unexpected event %+v", ev)
		}
	}
	if !overflow {
		if len(creates) != 1000 {
			t.Fatalf("burst: %d create events and no overflow, want 1000", len(creates))
		}
		for i, p := range creates {
			if want := fmt.Sprintf("sub/f%d", i+1); p != want {
				t.Fatalf("burst: create %d is %s, want %s", i, p, want)
			}
		}
	} else {
		t.Logf("burst: overflow after %d creates", len(creates))
	}

	// The CLI prints one line per change.
	cmd := exec.Command(filepath.Join(binDir, "hutch"), "watch", sb.ID, "w")
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
	// The CLI's watch is in place once the API's has seen a change after
	// it started; poll with a marker until the CLI prints it.
	var line string
	for i := 0; line == ""; i++ {
		if i == 100 {
			t.Fatalf("hutch watch printed nothing; stderr: %s", stderr.String())
		}
		sh(fmt.Sprintf("mkdir w/cli%d", i))
		select {
		case line = <-lines:
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !strings.HasPrefix(line, "create    cli") || !strings.HasSuffix(line, "/") {
		t.Errorf("hutch watch printed %q, want a create of a cli directory", line)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("hutch watch after SIGINT: %v, want exit 130; stderr: %s", err, stderr.String())
	}
	watchSettle(t, evs, quiet)

	// Removing the watched directory ends the watch, after a remove of ".".
	sh("rm -r w")
	var last api.WatchEvent
	for _, ev := range watchSettle(t, evs, quiet) {
		last = ev
	}
	if last != (api.WatchEvent{Type: api.WatchRemove, Path: ".", IsDir: true}) {
		t.Errorf("the last event after rm -r of the watched directory is %+v, want a remove of .", last)
	}
	select {
	case err := <-end:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the watch of a removed directory ended with %v, want io.EOF", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch of a removed directory did not end")
	}

	// Destroying the sandbox ends a watch, with an error.
	sh("mkdir w2")
	w2, err := c.WatchFiles(ctx, sb.ID, "w2", false)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	_, end2 := watchEvents(w2)
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-end2:
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("the watch of a destroyed sandbox ended with %v, want a broken stream", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch of a destroyed sandbox did not end")
	}
}
