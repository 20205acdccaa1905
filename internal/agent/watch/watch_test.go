package watch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/watch"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// watchStream reads a watch's events into a channel as they come.
type watchStream struct {
	w   *agentclient.Watch
	evs chan api.WatchEvent
	end chan error // what ended the stream, once evs is closed
	// quiet is how long the watch must stay silent for settle to return:
	// well past the coalescing window.
	quiet time.Duration
}

// openWatch watches path through f's agent.
func openWatch(t *testing.T, f *agenttest.Fixture, path string, recursive bool) *watchStream {
	t.Helper()
	w, err := f.Client.Watch(context.Background(), path, recursive)
	if err != nil {
		t.Fatalf("Watch(%q): %v", path, err)
	}
	s := &watchStream{w: w, evs: make(chan api.WatchEvent, 100000), end: make(chan error, 1), quiet: 250 * time.Millisecond}
	go func() {
		defer close(s.evs)
		for {
			ev, err := w.Next()
			if err != nil {
				s.end <- err
				return
			}
			s.evs <- ev
		}
	}()
	t.Cleanup(func() { w.Close() })
	return s
}

// settle returns the events that arrive until the stream has been quiet
// for the quiet period, with their times checked and cleared.
func (s *watchStream) settle(t *testing.T) []api.WatchEvent {
	t.Helper()
	return s.collect(t, 0, func([]api.WatchEvent) bool { return false })
}

// until returns the events that arrive until done holds for them.
func (s *watchStream) until(t *testing.T, done func([]api.WatchEvent) bool) []api.WatchEvent {
	t.Helper()
	evs := s.collect(t, -1, done)
	if !done(evs) {
		t.Fatalf("the watch ended after %d events: %s", len(evs), formatEvents(evs))
	}
	return evs
}

// collect reads events until done holds for them or, once there are at
// least n (never when n < 0), the stream has been quiet for the quiet
// period.
func (s *watchStream) collect(t *testing.T, n int, done func([]api.WatchEvent) bool) []api.WatchEvent {
	t.Helper()
	var evs []api.WatchEvent
	guard := time.After(60 * time.Second)
	for !done(evs) {
		var quiet <-chan time.Time
		if n >= 0 && len(evs) >= n {
			quiet = time.After(s.quiet)
		}
		select {
		case ev, ok := <-s.evs:
			if !ok {
				return evs
			}
			if ev.Time.IsZero() || ev.Time.Location() != time.UTC || time.Since(ev.Time) > time.Minute {
				t.Errorf("event %+v: time is not a recent UTC time", ev)
			}
			ev.Time = time.Time{}
			evs = append(evs, ev)
		case <-quiet:
			return evs
		case <-guard:
			t.Fatalf("60 s of watching and still not done; %d events so far: %s", len(evs), formatEvents(evs))
		}
	}
	return evs
}

// ended returns what ended the stream, failing if it does not end.
func (s *watchStream) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.end:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not end")
		return nil
	}
}

// endBy ends the watch of dir by removing it, its files first in the order
// of their names: a watch that ends sends at once what waits in its
// queue. It checks that the watch ends cleanly with the removals' events
// last, and returns the events before them.
func (s *watchStream) endBy(t *testing.T, dir string) []api.WatchEvent {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var removals []api.WatchEvent
	for _, e := range ents {
		must(t, os.Remove(filepath.Join(dir, e.Name())))
		removals = append(removals, ev(api.WatchRemove, e.Name()))
	}
	must(t, os.Remove(dir))
	removals = append(removals, dirEv(api.WatchRemove, "."))
	evs := s.collect(t, -1, func([]api.WatchEvent) bool { return false })
	if err := s.ended(t); err != io.EOF {
		t.Fatalf("the watch of a removed directory ended with %v, want io.EOF", err)
	}
	n := len(evs) - len(removals)
	if n < 0 || !cmp.Equal(removals, evs[n:]) {
		t.Fatalf("the watch ended without its removals last: %s", formatEvents(evs))
	}
	return evs[:n]
}

func formatEvents(evs []api.WatchEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %s %s", e.Type, e.Path)
		if e.OldPath != "" {
			fmt.Fprintf(&b, " (from %s)", e.OldPath)
		}
		if e.IsDir {
			b.WriteString(" dir")
		}
	}
	return b.String()
}

func ev(typ, p string) api.WatchEvent { return api.WatchEvent{Type: typ, Path: p} }

func dirEv(typ, p string) api.WatchEvent { return api.WatchEvent{Type: typ, Path: p, IsDir: true} }

// checkEvents runs op and compares the events that follow with want: it
// waits for as many as want holds, then for the watch to go quiet.
func (s *watchStream) checkEvents(t *testing.T, what string, op func(), want ...api.WatchEvent) {
	t.Helper()
	op()
	got := s.collect(t, len(want), func([]api.WatchEvent) bool { return false })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: events (-want +got):\n%s", what, diff)
	}
}

// touch creates p without opening it for writing: one IN_CREATE, nothing
// else.
func touch(t *testing.T, p string) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchEvents(t *testing.T) {
	f := agenttest.New(t, nil)
	must(t, os.Mkdir(filepath.Join(f.Work, "sub"), 0o755))
	s := openWatch(t, f, ".", false)
	at := func(p string) string { return filepath.Join(f.Work, p) }

	s.checkEvents(t, "create", func() { touch(t, at("a")) }, ev(api.WatchCreate, "a"))
	s.checkEvents(t, "write", func() { agenttest.WriteHost(t, at("a"), "hello") }, ev(api.WatchWrite, "a"))
	s.checkEvents(t, "rename", func() { must(t, os.Rename(at("a"), at("b"))) },
		api.WatchEvent{Type: api.WatchRename, Path: "b", OldPath: "a"})
	s.checkEvents(t, "remove", func() { must(t, os.Remove(at("b"))) }, ev(api.WatchRemove, "b"))
	s.checkEvents(t, "mkdir", func() { must(t, os.Mkdir(at("d"), 0o755)) }, dirEv(api.WatchCreate, "d"))
	s.checkEvents(t, "not recursive: below a subdirectory", func() { touch(t, at("sub/x")); touch(t, at("d/y")) })
	s.checkEvents(t, "rmdir", func() { must(t, os.Remove(at("d/y"))); must(t, os.Remove(at("d"))) }, dirEv(api.WatchRemove, "d"))
	outside := filepath.Join(f.Root, "elsewhere")
	s.checkEvents(t, "moved out", func() { must(t, os.Rename(at("sub"), outside)) }, dirEv(api.WatchRemove, "sub"))
	s.checkEvents(t, "moved in", func() { must(t, os.Rename(outside, at("back"))) }, dirEv(api.WatchCreate, "back"))
}

// TestWatchHidesWriteTemps: a file the files API writes goes through a
// temporary name renamed into place; a watch sees one create of the file,
// whether it is new or replaced, and never the temporary name.
func TestWatchHidesWriteTemps(t *testing.T) {
	f := agenttest.New(t, nil)
	s := openWatch(t, f, ".", false)
	write := func(name, body string) func() {
		return func() {
			if _, err := f.Client.WriteFile(context.Background(), name, "", false, strings.NewReader(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.checkEvents(t, "a new file", write("new.txt", "one"), ev(api.WatchCreate, "new.txt"))
	s.checkEvents(t, "a file replaced", write("new.txt", "two"), ev(api.WatchCreate, "new.txt"))
	s.checkEvents(t, "a temporary name of the user's own is not hidden", func() { touch(t, filepath.Join(f.Work, ".x.hutch-notmine")) },
		ev(api.WatchCreate, ".x.hutch-notmine"))
}

func TestWatchRecursive(t *testing.T) {
	f := agenttest.New(t, nil)
	at := func(p string) string { return filepath.Join(f.Work, p) }
	must(t, os.MkdirAll(at("old/deep"), 0o755))
	s := openWatch(t, f, ".", true)

	s.checkEvents(t, "a directory there before", func() { touch(t, at("old/deep/x")) }, ev(api.WatchCreate, "old/deep/x"))
	// A file made in a new directory at once may be seen by the directory's
	// scan or by its watch, but is reported once.
	s.checkEvents(t, "a new directory and a file in it", func() {
		must(t, os.Mkdir(at("new"), 0o755))
		touch(t, at("new/f"))
	}, dirEv(api.WatchCreate, "new"), ev(api.WatchCreate, "new/f"))
	s.checkEvents(t, "mkdir -p", func() {
		must(t, os.MkdirAll(at("p/q/r"), 0o755))
		touch(t, at("p/q/r/f"))
	}, dirEv(api.WatchCreate, "p"), dirEv(api.WatchCreate, "p/q"), dirEv(api.WatchCreate, "p/q/r"), ev(api.WatchCreate, "p/q/r/f"))
	s.checkEvents(t, "the new directory is watched", func() { touch(t, at("p/q/r/g")) }, ev(api.WatchCreate, "p/q/r/g"))
	s.checkEvents(t, "a directory renamed", func() { must(t, os.Rename(at("p"), at("p2"))) },
		api.WatchEvent{Type: api.WatchRename, Path: "p2", OldPath: "p", IsDir: true})
	s.checkEvents(t, "below the renamed directory", func() { touch(t, at("p2/q/r/h")) }, ev(api.WatchCreate, "p2/q/r/h"))
	outside := filepath.Join(f.Root, "outside")
	s.checkEvents(t, "a directory moved out", func() { must(t, os.Rename(at("p2"), outside)) }, dirEv(api.WatchRemove, "p2"))
	s.checkEvents(t, "below the moved-out directory", func() { touch(t, filepath.Join(outside, "q/r/i")) })
	s.checkEvents(t, "a directory moved in", func() { must(t, os.Rename(outside, at("in"))) },
		dirEv(api.WatchCreate, "in"), dirEv(api.WatchCreate, "in/q"), dirEv(api.WatchCreate, "in/q/r"),
		ev(api.WatchCreate, "in/q/r/f"), ev(api.WatchCreate, "in/q/r/g"), ev(api.WatchCreate, "in/q/r/h"), ev(api.WatchCreate, "in/q/r/i"))
	s.checkEvents(t, "below the moved-in directory", func() { agenttest.WriteHost(t, at("in/q/r/f"), "x") }, ev(api.WatchWrite, "in/q/r/f"))
	s.checkEvents(t, "rm -r", func() {
		for _, p := range []string{"in/q/r/f", "in/q/r/g", "in/q/r/h", "in/q/r/i", "in/q/r", "in/q"} {
			must(t, os.Remove(at(p)))
		}
	},
		ev(api.WatchRemove, "in/q/r/f"), ev(api.WatchRemove, "in/q/r/g"), ev(api.WatchRemove, "in/q/r/h"), ev(api.WatchRemove, "in/q/r/i"),
		dirEv(api.WatchRemove, "in/q/r"), dirEv(api.WatchRemove, "in/q"))
}

func TestWatchBurst(t *testing.T) {
	f := agenttest.New(t, nil)
	s := openWatch(t, f, ".", true)
	const n = 1000
	for i := range n {
		touch(t, filepath.Join(f.Work, fmt.Sprintf("f%04d", i)))
	}
	evs := s.until(t, func(evs []api.WatchEvent) bool {
		return len(evs) >= n || (len(evs) > 0 && evs[len(evs)-1].Type == api.WatchOverflow)
	})
	if last := evs[len(evs)-1]; last.Type == api.WatchOverflow {
		t.Logf("overflow after %d events", len(evs)-1)
		evs = evs[:len(evs)-1]
		if len(evs) >= n {
			t.Fatalf("%d events and then an overflow", len(evs))
		}
	}
	for i, e := range evs {
		if want := ev(api.WatchCreate, fmt.Sprintf("f%04d", i)); e != want {
			t.Fatalf("event %d = %+v, want %+v", i, e, want)
		}
	}
	if more := s.settle(t); len(more) > 0 {
		t.Fatalf("%d more events: %s", len(more), formatEvents(more))
	}
}

func TestWatchOverflow(t *testing.T) {
	// Events that wait an hour are sent only when the watch ends: a queue
	// of 100 fills however slowly the files are made, and what follows
	// its overflow is dropped however slowly the watch reads them.
	restore := watch.SetBounds(watch.Bounds{QueueMax: 100, Window: time.Hour})
	f := agenttest.New(t, nil)
	dir := filepath.Join(f.Work, "w")
	must(t, os.Mkdir(dir, 0o755))
	s := openWatch(t, f, "w", false)
	restore()
	var want []api.WatchEvent
	for i := range 1000 {
		name := fmt.Sprintf("f%04d", i)
		touch(t, filepath.Join(dir, name))
		if i < 100 {
			want = append(want, ev(api.WatchCreate, name))
		}
	}
	want = append(want, api.WatchEvent{Type: api.WatchOverflow})
	// Removing the directory ends the watch, which sends what waits; the
	// removals themselves come after the overflow and are dropped too.
	must(t, os.RemoveAll(dir))
	if diff := cmp.Diff(want, s.collect(t, -1, func([]api.WatchEvent) bool { return false })); diff != "" {
		t.Fatalf("1000 creates into a queue of 100 (-want +got):\n%s", diff)
	}
	if err := s.ended(t); err != io.EOF {
		t.Fatalf("the watch ended with %v, want io.EOF", err)
	}

	// Once the overflow is out, events flow again. A queue of one fills in
	// one step of the watch: a directory moved in is reported with what
	// its scan finds in it, and the first file found overflows.
	defer watch.SetBounds(watch.Bounds{QueueMax: 1, Window: time.Second})()
	s = openWatch(t, f, ".", true)
	outside := filepath.Join(f.Root, "outside")
	must(t, os.Mkdir(outside, 0o755))
	touch(t, filepath.Join(outside, "x"))
	touch(t, filepath.Join(outside, "y"))
	s.checkEvents(t, "a directory of two files moved into a queue of one", func() { must(t, os.Rename(outside, filepath.Join(f.Work, "in"))) },
		dirEv(api.WatchCreate, "in"), api.WatchEvent{Type: api.WatchOverflow})
	s.checkEvents(t, "after the overflow", func() { touch(t, filepath.Join(f.Work, "after")) }, ev(api.WatchCreate, "after"))
}

func TestWatchDirectoryLimit(t *testing.T) {
	// The watched directory and two more: the rest are reported, not
	// silently left out.
	defer watch.SetBounds(watch.Bounds{MaxDirs: 3})()
	f := agenttest.New(t, nil)
	at := func(p string) string { return filepath.Join(f.Work, p) }
	for _, d := range []string{"a", "b", "c", "d"} {
		must(t, os.Mkdir(at(d), 0o755))
	}
	s := openWatch(t, f, ".", true)
	want := []api.WatchEvent{dirEv(api.WatchOverflow, "c"), dirEv(api.WatchOverflow, "d")}
	if diff := cmp.Diff(want, s.collect(t, len(want), func([]api.WatchEvent) bool { return false })); diff != "" {
		t.Errorf("directories over the limit (-want +got):\n%s", diff)
	}
	s.checkEvents(t, "below watched and unwatched directories", func() {
		touch(t, at("a/x"))
		touch(t, at("c/x"))
	}, ev(api.WatchCreate, "a/x"))
	s.checkEvents(t, "a new directory over the limit", func() { must(t, os.Mkdir(at("e"), 0o755)) },
		dirEv(api.WatchCreate, "e"), dirEv(api.WatchOverflow, "e"))
}

func TestWatchCoalescesWrites(t *testing.T) {
	// Events that wait an hour are sent only when the watch ends, so what
	// coalesces does not hang on how fast the writes follow each other.
	defer watch.SetBounds(watch.Bounds{Window: time.Hour})()
	f := agenttest.New(t, nil)
	for _, c := range []struct {
		name  string
		files []string // in the watched directory before the watch
		op    func(at func(string) string)
		want  []api.WatchEvent
	}{
		{
			name:  "100 writes",
			files: []string{"a", "b", "c"},
			op: func(at func(string) string) {
				fh, err := os.OpenFile(at("a"), os.O_WRONLY|os.O_APPEND, 0)
				must(t, err)
				for range 100 {
					fh.WriteString("x")
				}
				must(t, fh.Close())
			},
			want: []api.WatchEvent{ev(api.WatchWrite, "a")},
		},
		{
			name:  "writes of three paths",
			files: []string{"a", "b", "c"},
			op: func(at func(string) string) {
				agenttest.WriteHost(t, at("b"), "1")
				agenttest.WriteHost(t, at("a"), "1")
				agenttest.WriteHost(t, at("b"), "2")
				agenttest.WriteHost(t, at("c"), "1")
				agenttest.WriteHost(t, at("a"), "2")
			},
			want: []api.WatchEvent{ev(api.WatchWrite, "b"), ev(api.WatchWrite, "a"), ev(api.WatchWrite, "c")},
		},
		{
			name: "a new file written at once",
			op:   func(at func(string) string) { agenttest.WriteHost(t, at("d"), "new") },
			want: []api.WatchEvent{ev(api.WatchCreate, "d")},
		},
		{
			name: "create, remove, create",
			op: func(at func(string) string) {
				touch(t, at("e"))
				must(t, os.Remove(at("e")))
				touch(t, at("e"))
			},
			want: []api.WatchEvent{ev(api.WatchCreate, "e"), ev(api.WatchRemove, "e"), ev(api.WatchCreate, "e")},
		},
	} {
		dir := filepath.Join(f.Work, strings.ReplaceAll(c.name, " ", "-"))
		at := func(p string) string { return filepath.Join(dir, p) }
		must(t, os.Mkdir(dir, 0o755))
		for _, n := range c.files {
			touch(t, at(n))
		}
		s := openWatch(t, f, filepath.Base(dir), false)
		c.op(at)
		if diff := cmp.Diff(c.want, s.endBy(t, dir)); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestWatchSymlinks(t *testing.T) {
	f := agenttest.New(t, nil)
	host := t.TempDir() // outside the sandbox root
	agenttest.Symlink(t, host, filepath.Join(f.Work, "out"))

	// The link resolves inside the root, where its target does not exist.
	_, err := f.Client.Watch(context.Background(), "out", false)
	agenttest.WantErr(t, "watch a link to outside", err, errdefs.ErrNotFound, "file_not_found")

	s := openWatch(t, f, ".", true)
	s.checkEvents(t, "a change behind a link to outside", func() { touch(t, filepath.Join(host, "x")) })
	must(t, os.Mkdir(filepath.Join(f.Work, "real"), 0o755))
	s.collect(t, 1, func([]api.WatchEvent) bool { return false })
	s.checkEvents(t, "a link to a directory inside", func() { agenttest.Symlink(t, "real", filepath.Join(f.Work, "ln")) }, ev(api.WatchCreate, "ln"))
	s.checkEvents(t, "a change behind it is reported once, at its real path", func() { touch(t, filepath.Join(f.Work, "ln", "y")) },
		ev(api.WatchCreate, "real/y"))
}

func TestWatchErrors(t *testing.T) {
	f := agenttest.New(t, nil)
	agenttest.WriteHost(t, filepath.Join(f.Work, "file"), "x")
	ctx := context.Background()
	for _, c := range []struct {
		path  string
		class error
		code  string
	}{
		{"missing", errdefs.ErrNotFound, "file_not_found"},
		{"file", errdefs.ErrInvalid, "not_a_directory"},
		{"../x", errdefs.ErrInvalid, "invalid_path"},
		{"", errdefs.ErrInvalid, "invalid_path"},
		{"/etc", errdefs.ErrInvalid, "path_outside_sandbox"},
	} {
		_, err := f.Client.Watch(ctx, c.path, true)
		agenttest.WantErr(t, "watch "+c.path, err, c.class, c.code)
	}

	defer watch.SetBounds(watch.Bounds{Slots: 1})()
	w, err := f.Client.Watch(ctx, ".", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Client.Watch(ctx, ".", false)
	agenttest.WantErr(t, "a second watch over the limit of one", err, errdefs.ErrConflict, "watch_limit")
	w.Close()
	agenttest.WaitFor(t, "the slot freed", func() bool {
		w, err := f.Client.Watch(ctx, ".", false)
		if err == nil {
			w.Close()
		}
		return err == nil
	})
}

// inotifyFDs counts this process's inotify instances and the fds open on
// dir.
func inotifyFDs(t *testing.T, dir string) (instances, onDir int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		switch l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l {
		case "anon_inode:inotify":
			instances++
		case dir:
			onDir++
		}
	}
	return instances, onDir
}

func TestWatchEndsAndClosesFDs(t *testing.T) {
	f := agenttest.New(t, nil)
	dir := filepath.Join(f.Work, "w")
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	// Watches of earlier tests close as their servers do, a little later.
	agenttest.WaitFor(t, "no inotify instance left from other tests", func() bool { i, _ := inotifyFDs(t, dir); return i == 0 })

	s := openWatch(t, f, "w", true)
	// No fd stays on the directory: it would keep the kernel from
	// reporting the directory's removal.
	if i, d := inotifyFDs(t, dir); i != 1 || d != 0 {
		t.Fatalf("while watching: %d inotify instances and %d fds on the directory, want 1 and 0", i, d)
	}
	s.w.Close()
	agenttest.WaitFor(t, "the watch's fds closed", func() bool { i, d := inotifyFDs(t, dir); return i == 0 && d == 0 })
	if err := s.ended(t); err == nil || err == io.EOF {
		t.Fatalf("a closed watch ended with %v, want an error", err)
	}

	// Removing the watched directory ends the watch from the agent's side.
	s = openWatch(t, f, "w", true)
	must(t, os.RemoveAll(dir))
	want := []api.WatchEvent{dirEv(api.WatchRemove, "a/b"), dirEv(api.WatchRemove, "a"), dirEv(api.WatchRemove, ".")}
	evs := s.collect(t, len(want), func([]api.WatchEvent) bool { return false })
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("rm -r of the watched directory (-want +got):\n%s", diff)
	}
	if err := s.ended(t); err != io.EOF {
		t.Fatalf("the watch ended with %v, want io.EOF", err)
	}
	agenttest.WaitFor(t, "the watch's fds closed", func() bool { i, d := inotifyFDs(t, dir); return i == 0 && d == 0 })
}

func TestWatchEndsOnShutdown(t *testing.T) {
	root := t.TempDir()
	sockDir, err := os.MkdirTemp("", "hutch-agent-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "a.sock"))
	must(t, err)
	srv, err := agent.New(agent.Config{
		Token: agenttest.Token, Root: root, Workdir: root, MaxFileBytes: agenttest.MaxFileBytes,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	must(t, err)
	go srv.Serve(ln)
	f := &agenttest.Fixture{Client: agentclient.New("unix", ln.Addr().String(), agenttest.Token), Root: root, Work: root}
	t.Cleanup(f.Client.Close)
	s := openWatch(t, f, ".", true)

	// Shutdown waits for requests in flight: an open watch must end at
	// once, and as a broken stream, not as the clean end of a removed
	// directory.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a watch open: %v", err)
	}
	if err := s.ended(t); err == nil || err == io.EOF {
		t.Fatalf("the watch ended with %v, want a broken stream", err)
	}
}
