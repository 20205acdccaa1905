package files_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

func names(l api.FileList) []string {
	var n []string
	for _, e := range l.Entries {
		n = append(n, e.Name)
	}
	return n
}

func TestWriteReadStat(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()

	fi, err := f.Client.WriteFile(ctx, "a.txt", "0600", false, strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	want := api.FileInfo{Name: "a.txt", Path: filepath.Join(f.Work, "a.txt"), Type: api.FileRegular, Size: 5, Mode: "0600"}
	if d := cmp.Diff(want, fi, cmpIgnoreTime); d != "" {
		t.Errorf("WriteFile info (-want +got):\n%s", d)
	}
	if got, err := f.ReadAll(t, "a.txt"); err != nil || got != "hello" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.Work, "a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("on disk %q, %v", b, err)
	}

	// Overwrite replaces the content and takes the default mode.
	if _, err := f.Client.WriteFile(ctx, filepath.Join(f.Work, "a.txt"), "", false, strings.NewReader("bye")); err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.Stat(ctx, "a.txt")
	if err != nil || st.Size != 3 || st.Mode != "0644" || st.ModTime.IsZero() {
		t.Errorf("Stat after overwrite = %+v, %v", st, err)
	}
	// Atomic write leaves no temporary file behind.
	l, err := f.Client.List(ctx, ".")
	if err != nil || !cmp.Equal(names(l), []string{"a.txt"}) {
		t.Errorf("List = %v, %v; want only a.txt", names(l), err)
	}

	// Empty body.
	if fi, err := f.Client.WriteFile(ctx, "empty", "", false, nil); err != nil || fi.Size != 0 {
		t.Errorf("WriteFile empty = %+v, %v", fi, err)
	}

	// Stat of the root and of a symlink (lstat).
	if st, err := f.Client.Stat(ctx, f.Root); err != nil || st.Type != api.FileDir || st.Path != f.Root {
		t.Errorf("Stat root = %+v, %v", st, err)
	}
	agenttest.Symlink(t, "a.txt", filepath.Join(f.Work, "link"))
	if st, err := f.Client.Stat(ctx, "link"); err != nil || st.Type != api.FileSymlink || st.LinkTarget != "a.txt" {
		t.Errorf("Stat link = %+v, %v", st, err)
	}
}

var cmpIgnoreTime = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ModTime" }, cmp.Ignore())

func TestFileErrors(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	agenttest.WriteHost(t, filepath.Join(f.Work, "dir", "file"), "x")
	agenttest.WriteHost(t, filepath.Join(f.Work, "big"), strings.Repeat("b", agenttest.MaxFileBytes+1))
	if err := os.WriteFile(filepath.Join(f.Work, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Client.ReadFile(ctx, "missing")
	agenttest.WantErr(t, "read missing", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.Client.ReadFile(ctx, "dir")
	agenttest.WantErr(t, "read dir", err, errdefs.ErrInvalid, "is_a_directory")
	_, err = f.Client.ReadFile(ctx, "big")
	agenttest.WantErr(t, "read big", err, errdefs.ErrTooLarge, "file_too_large")
	_, err = f.Client.ReadFile(ctx, "plain/x")
	agenttest.WantErr(t, "read through a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = f.Client.WriteFile(ctx, "nodir/x", "", false, strings.NewReader("x"))
	agenttest.WantErr(t, "write without parent", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.Client.WriteFile(ctx, "dir", "", false, strings.NewReader("x"))
	agenttest.WantErr(t, "write over a dir", err, errdefs.ErrInvalid, "is_a_directory")
	_, err = f.Client.WriteFile(ctx, "x", "0999", false, strings.NewReader("x"))
	agenttest.WantErr(t, "bad mode", err, errdefs.ErrInvalid, "invalid_mode")
	_, err = f.Client.List(ctx, "plain")
	agenttest.WantErr(t, "list a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = f.Client.Stat(ctx, "missing")
	agenttest.WantErr(t, "stat missing", err, errdefs.ErrNotFound, "file_not_found")
	if err != nil && !strings.Contains(err.Error(), filepath.Join(f.Work, "missing")) {
		t.Errorf("message %q does not name the path", err)
	}
}

func TestWriteTooLarge(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), agenttest.MaxFileBytes+1)
	// With a length the agent refuses before reading; without one (a plain
	// reader is sent chunked) it stops after the limit.
	_, err := f.Client.WriteFile(ctx, "big", "", false, bytes.NewReader(body))
	agenttest.WantErr(t, "sized body", err, errdefs.ErrTooLarge, "file_too_large")
	_, err = f.Client.WriteFile(ctx, "big", "", false, struct{ *bytes.Reader }{bytes.NewReader(body)})
	agenttest.WantErr(t, "chunked body", err, errdefs.ErrTooLarge, "file_too_large")
	entries, err := os.ReadDir(f.Work)
	if err != nil || len(entries) != 0 {
		t.Errorf("workdir holds %v after refused writes, want nothing", entries)
	}
	// Exactly the limit is fine.
	if fi, err := f.Client.WriteFile(ctx, "max", "", false, bytes.NewReader(body[:agenttest.MaxFileBytes])); err != nil || fi.Size != agenttest.MaxFileBytes {
		t.Errorf("write of the limit = %+v, %v", fi, err)
	}
}

func TestListMkdirMoveRemove(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()

	fi, err := f.Client.Mkdir(ctx, api.MkdirRequest{Path: "a/b/c", Mode: "0700"})
	if err != nil || fi.Type != api.FileDir || fi.Mode != "0700" || fi.Path != filepath.Join(f.Work, "a/b/c") {
		t.Fatalf("Mkdir = %+v, %v", fi, err)
	}
	if _, err := f.Client.Mkdir(ctx, api.MkdirRequest{Path: "a/b/c"}); err != nil {
		t.Errorf("Mkdir of an existing dir: %v", err)
	}
	agenttest.WriteHost(t, filepath.Join(f.Work, "a", "f"), "f")
	_, err = f.Client.Mkdir(ctx, api.MkdirRequest{Path: "a/f"})
	agenttest.WantErr(t, "mkdir over a file", err, errdefs.ErrConflict, "file_exists")
	_, err = f.Client.Mkdir(ctx, api.MkdirRequest{Path: "a/f/g"})
	agenttest.WantErr(t, "mkdir under a file", err, errdefs.ErrInvalid, "not_a_directory")

	l, err := f.Client.List(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := api.FileList{Path: filepath.Join(f.Work, "a"), Entries: []api.FileInfo{
		{Name: "b", Path: filepath.Join(f.Work, "a", "b"), Type: api.FileDir, Mode: "0700"},
		{Name: "f", Path: filepath.Join(f.Work, "a", "f"), Type: api.FileRegular, Mode: "0644", Size: 1},
	}}
	// A directory's size depends on the file system.
	l.Entries[0].Size = 0
	if d := cmp.Diff(want, l, cmpIgnoreTime); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	if empty, err := f.Client.List(ctx, "a/b/c"); err != nil || empty.Entries == nil || len(empty.Entries) != 0 {
		t.Errorf("List of an empty dir = %+v, %v; want an empty, non-nil list", empty, err)
	}

	// Move refuses to replace unless asked.
	agenttest.WriteHost(t, filepath.Join(f.Work, "g"), "g")
	_, err = f.Client.Move(ctx, api.MoveRequest{From: "a/f", To: "g"})
	agenttest.WantErr(t, "move onto a file", err, errdefs.ErrConflict, "file_exists")
	fi, err = f.Client.Move(ctx, api.MoveRequest{From: "a/f", To: "g", Overwrite: true})
	if err != nil || fi.Path != filepath.Join(f.Work, "g") || fi.Size != 1 {
		t.Errorf("Move overwrite = %+v, %v", fi, err)
	}
	if got, _ := f.ReadAll(t, "g"); got != "f" {
		t.Errorf("after move g holds %q, want f", got)
	}
	if _, err := f.Client.Move(ctx, api.MoveRequest{From: "a", To: "moved"}); err != nil {
		t.Errorf("Move dir: %v", err)
	}
	_, err = f.Client.Move(ctx, api.MoveRequest{From: "nope", To: "x"})
	agenttest.WantErr(t, "move missing", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.Client.Move(ctx, api.MoveRequest{From: "moved", To: "moved/b/inside"})
	agenttest.WantErr(t, "move into itself", err, errdefs.ErrInvalid, "invalid_path")

	// Remove: a non-empty dir needs recursive; the root cannot go.
	err = f.Client.Remove(ctx, "moved", false)
	agenttest.WantErr(t, "remove non-empty", err, errdefs.ErrConflict, "directory_not_empty")
	agenttest.Symlink(t, f.Work, filepath.Join(f.Work, "moved", "b", "loop"))
	if err := f.Client.Remove(ctx, "moved", true); err != nil {
		t.Errorf("recursive remove: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.Work, "moved")); !os.IsNotExist(err) {
		t.Errorf("moved still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.Work, "g")); err != nil {
		t.Errorf("recursive remove followed a symlink: %v", err)
	}
	if err := f.Client.Remove(ctx, "g", false); err != nil {
		t.Errorf("remove file: %v", err)
	}
	err = f.Client.Remove(ctx, "g", false)
	agenttest.WantErr(t, "remove missing", err, errdefs.ErrNotFound, "file_not_found")
	err = f.Client.Remove(ctx, f.Root, true)
	agenttest.WantErr(t, "remove root", err, errdefs.ErrInvalid, "invalid_path")
	if _, err := os.Stat(f.Root); err != nil {
		t.Errorf("root is gone: %v", err)
	}
}
