package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestQuickStart walks the README's quick start through the Go client,
// under each driver: create, exec, write and read a file, tar both ways,
// destroy.
func TestQuickStart(t *testing.T) {
	for _, drv := range []struct {
		name      string
		isolation string
	}{{"namespace", api.IsolationFull}, {"process", api.IsolationDegraded}} {
		t.Run(drv.name, func(t *testing.T) { quickStart(t, drv.name, drv.isolation) })
	}
}

func quickStart(t *testing.T, driver, isolation string) {
	s := startServer(t, "", "--driver", driver)
	c := s.client()
	ctx := context.Background()

	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != driver || info.Isolation != isolation || (len(info.Degraded) > 0) != (isolation == api.IsolationDegraded) {
		t.Fatalf("info = %+v; want the %s driver reported with %s isolation", info, driver, isolation)
	}

	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{
		Env:    map[string]string{"GREETING": "hi"},
		Limits: &api.Limits{MemoryMB: 256, Pids: 64},
		Labels: map[string]string{"team": "e2e"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != api.StateRunning || sb.Isolation != isolation || sb.Driver != driver {
		t.Fatalf("created %+v; want running on the %s driver with %s isolation", sb, driver, isolation)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo $GREETING; echo oops >&2; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "hi\n" || res.Stderr != "oops\n" || res.ExitCode != 4 {
		t.Fatalf("exec = %+v", res)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"definitely-not-installed"}}); err != nil || res.ExitCode != 127 || res.Error == "" {
		t.Fatalf("missing program = %+v, %v; want exit 127 with a message", res, err)
	}

	// A write makes the directories above the file that are missing.
	if _, err := c.WriteFile(ctx, sb.ID, "made/on/the/way.txt", 0o600, strings.NewReader("x")); err != nil {
		t.Fatalf("write under missing directories: %v", err)
	}
	if _, err := c.Mkdir(ctx, sb.ID, api.MkdirRequest{Path: "notes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFile(ctx, sb.ID, "notes/hello.txt", 0o600, strings.NewReader("hello from the API\n")); err != nil {
		t.Fatal(err)
	}
	res, _ = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "notes/hello.txt"}})
	if res.Stdout != "hello from the API\n" {
		t.Fatalf("cat = %+v", res)
	}
	rc, err := c.ReadFile(ctx, sb.ID, "notes/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello from the API\n" {
		t.Fatalf("read = %q", b)
	}
	if fi, err := c.StatFile(ctx, sb.ID, "notes/hello.txt"); err != nil || fi.Mode != "0600" || fi.Size != 19 {
		t.Fatalf("stat = %+v, %v", fi, err)
	}
	if _, err := c.Move(ctx, sb.ID, api.MoveRequest{From: "notes/hello.txt", To: "notes/moved.txt"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListFiles(ctx, sb.ID, "notes")
	if err != nil || len(list.Entries) != 1 || list.Entries[0].Name != "moved.txt" {
		t.Fatalf("list = %+v, %v", list, err)
	}

	// Tar: upload a tree, see it from inside, download it again.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range map[string]string{"app/main.js": "console.log(1)\n", "app/lib/util.js": "exports.x = 1\n"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	if tr, err := c.UploadTar(ctx, sb.ID, "project", &buf); err != nil || tr.Files != 2 {
		t.Fatalf("upload tar = %+v, %v", tr, err)
	}
	res, _ = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "project/app/lib/util.js"}})
	if res.Stdout != "exports.x = 1\n" {
		t.Fatalf("file from tar = %+v", res)
	}
	rc, err = c.DownloadTar(ctx, sb.ID, "project")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names[strings.TrimPrefix(h.Name, "./")] = true
	}
	rc.Close()
	if !names["app/main.js"] || !names["app/lib/util.js"] {
		t.Fatalf("downloaded tar holds %v", names)
	}

	// Streaming exec: chunks arrive before the command ends.
	st, err := c.ExecStream(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo first; sleep 1; echo second"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ev, err := st.Next()
	if err != nil || ev.Type != api.ExecStdout || string(ev.Data) != "first\n" {
		t.Fatalf("first event = %+v, %v", ev, err)
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Errorf("first chunk took %s: the stream is buffered", time.Since(start))
	}
	result, err := st.Copy(io.Discard, io.Discard)
	st.Close()
	if err != nil || result.ExitCode != 0 {
		t.Fatalf("stream result = %+v, %v", result, err)
	}

	// Listing with filters.
	other, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Labels: map[string]string{"team": "other"}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.ListSandboxes(ctx, client.ListOptions{Labels: map[string]string{"team": "e2e"}})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != sb.ID {
		t.Fatalf("label filter = %+v, %v", page, err)
	}

	// Stop, exec refused, start, files kept.
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); client.Code(err) != "sandbox_not_running" {
		t.Fatalf("exec on a stopped sandbox: %v", err)
	}
	if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	res, _ = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "notes/moved.txt"}})
	if res.Stdout != "hello from the API\n" {
		t.Fatalf("after restart = %+v", res)
	}

	for _, id := range []string{sb.ID, other.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StateDestroyed {
		t.Fatalf("after destroy = %+v, %v", got, err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); client.Code(err) != "sandbox_not_running" {
		t.Fatalf("exec on a destroyed sandbox: %v", err)
	}
}

// TestTimeoutDestroys: a sandbox past its timeout_s is destroyed by the
// server.
func TestTimeoutDestroys(t *testing.T) {
	s := startServer(t, "")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 1})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := c.GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == api.StateDestroyed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox with timeout_s 1 is still %s", got.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
