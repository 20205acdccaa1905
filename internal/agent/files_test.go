package agent_test

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
)

func names(l api.FileList) []string {
	var n []string
	for _, e := range l.Entries {
		n = append(n, e.Name)
	}
	return n
}

func TestWriteReadStat(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	fi, err := f.c.WriteFile(ctx, "a.txt", "0600", false, strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	want := api.FileInfo{Name: "a.txt", Path: filepath.Join(f.work, "a.txt"), Type: api.FileRegular, Size: 5, Mode: "0600"}
	if d := cmp.Diff(want, fi, cmpIgnoreTime); d != "" {
		t.Errorf("WriteFile info (-want +got):\n%s", d)
	}
	if got, err := f.readAll(t, "a.txt"); err != nil || got != "hello" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.work, "a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("on disk %q, %v", b, err)
	}

	// Overwrite replaces the content and takes the default mode.
	if _, err := f.c.WriteFile(ctx, filepath.Join(f.work, "a.txt"), "", false, strings.NewReader("bye")); err != nil {
		t.Fatal(err)
	}
	st, err := f.c.Stat(ctx, "a.txt")
	if err != nil || st.Size != 3 || st.Mode != "0644" || st.ModTime.IsZero() {
		t.Errorf("Stat after overwrite = %+v, %v", st, err)
	}
	// Atomic write leaves no temporary file behind.
	l, err := f.c.List(ctx, ".")
	if err != nil || !cmp.Equal(names(l), []string{"a.txt"}) {
		t.Errorf("List = %v, %v; want only a.txt", names(l), err)
	}

	// Empty body.
	if fi, err := f.c.WriteFile(ctx, "empty", "", false, nil); err != nil || fi.Size != 0 {
		t.Errorf("WriteFile empty = %+v, %v", fi, err)
	}

	// Stat of the root and of a symlink (lstat).
	if st, err := f.c.Stat(ctx, f.root); err != nil || st.Type != api.FileDir || st.Path != f.root {
		t.Errorf("Stat root = %+v, %v", st, err)
	}
	symlink(t, "a.txt", filepath.Join(f.work, "link"))
	if st, err := f.c.Stat(ctx, "link"); err != nil || st.Type != api.FileSymlink || st.LinkTarget != "a.txt" {
		t.Errorf("Stat link = %+v, %v", st, err)
	}
}

var cmpIgnoreTime = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ModTime" }, cmp.Ignore())

func TestFileErrors(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	writeHost(t, filepath.Join(f.work, "dir", "file"), "x")
	writeHost(t, filepath.Join(f.work, "big"), strings.Repeat("b", testMaxBytes+1))
	if err := os.WriteFile(filepath.Join(f.work, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.ReadFile(ctx, "missing")
	wantErr(t, "read missing", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.c.ReadFile(ctx, "dir")
	wantErr(t, "read dir", err, errdefs.ErrInvalid, "is_a_directory")
	_, err = f.c.ReadFile(ctx, "big")
	wantErr(t, "read big", err, errdefs.ErrTooLarge, "file_too_large")
	_, err = f.c.ReadFile(ctx, "plain/x")
	wantErr(t, "read through a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = f.c.WriteFile(ctx, "nodir/x", "", false, strings.NewReader("x"))
	wantErr(t, "write without parent", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.c.WriteFile(ctx, "dir", "", false, strings.NewReader("x"))
	wantErr(t, "write over a dir", err, errdefs.ErrInvalid, "is_a_directory")
	_, err = f.c.WriteFile(ctx, "x", "0999", false, strings.NewReader("x"))
	wantErr(t, "bad mode", err, errdefs.ErrInvalid, "invalid_mode")
	_, err = f.c.List(ctx, "plain")
	wantErr(t, "list a file", err, errdefs.ErrInvalid, "not_a_directory")
	_, err = f.c.Stat(ctx, "missing")
	wantErr(t, "stat missing", err, errdefs.ErrNotFound, "file_not_found")
	if err != nil && !strings.Contains(err.Error(), filepath.Join(f.work, "missing")) {
		t.Errorf("message %q does not name the path", err)
	}
}

func TestWriteTooLarge(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), testMaxBytes+1)
	// With a length the agent refuses before reading; without one (a plain
	// reader is sent chunked) it stops after the limit.
	_, err := f.c.WriteFile(ctx, "big", "", false, bytes.NewReader(body))
	wantErr(t, "sized body", err, errdefs.ErrTooLarge, "file_too_large")
	_, err = f.c.WriteFile(ctx, "big", "", false, struct{ *bytes.Reader }{bytes.NewReader(body)})
	wantErr(t, "chunked body", err, errdefs.ErrTooLarge, "file_too_large")
	entries, err := os.ReadDir(f.work)
	if err != nil || len(entries) != 0 {
		t.Errorf("workdir holds %v after refused writes, want nothing", entries)
	}
	// Exactly the limit is fine.
	if fi, err := f.c.WriteFile(ctx, "max", "", false, bytes.NewReader(body[:testMaxBytes])); err != nil || fi.Size != testMaxBytes {
		t.Errorf("write of the limit = %+v, %v", fi, err)
	}
}

func TestListMkdirMoveRemove(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	fi, err := f.c.Mkdir(ctx, api.MkdirRequest{Path: "a/b/c", Mode: "0700"})
	if err != nil || fi.Type != api.FileDir || fi.Mode != "0700" || fi.Path != filepath.Join(f.work, "a/b/c") {
		t.Fatalf("Mkdir = %+v, %v", fi, err)
	}
	if _, err := f.c.Mkdir(ctx, api.MkdirRequest{Path: "a/b/c"}); err != nil {
		t.Errorf("Mkdir of an existing dir: %v", err)
	}
	writeHost(t, filepath.Join(f.work, "a", "f"), "f")
	_, err = f.c.Mkdir(ctx, api.MkdirRequest{Path: "a/f"})
	wantErr(t, "mkdir over a file", err, errdefs.ErrConflict, "file_exists")
	_, err = f.c.Mkdir(ctx, api.MkdirRequest{Path: "a/f/g"})
	wantErr(t, "mkdir under a file", err, errdefs.ErrInvalid, "not_a_directory")

	l, err := f.c.List(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := api.FileList{Path: filepath.Join(f.work, "a"), Entries: []api.FileInfo{
		{Name: "b", Path: filepath.Join(f.work, "a", "b"), Type: api.FileDir, Mode: "0700"},
		{Name: "f", Path: filepath.Join(f.work, "a", "f"), Type: api.FileRegular, Mode: "0644", Size: 1},
	}}
	// A directory's size depends on the file system.
	l.Entries[0].Size = 0
	if d := cmp.Diff(want, l, cmpIgnoreTime); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	if empty, err := f.c.List(ctx, "a/b/c"); err != nil || empty.Entries == nil || len(empty.Entries) != 0 {
		t.Errorf("List of an empty dir = %+v, %v; want an empty, non-nil list", empty, err)
	}

	// Move refuses to replace unless asked.
	writeHost(t, filepath.Join(f.work, "g"), "g")
	_, err = f.c.Move(ctx, api.MoveRequest{From: "a/f", To: "g"})
	wantErr(t, "move onto a file", err, errdefs.ErrConflict, "file_exists")
	fi, err = f.c.Move(ctx, api.MoveRequest{From: "a/f", To: "g", Overwrite: true})
	if err != nil || fi.Path != filepath.Join(f.work, "g") || fi.Size != 1 {
		t.Errorf("Move overwrite = %+v, %v", fi, err)
	}
	if got, _ := f.readAll(t, "g"); got != "f" {
		t.Errorf("after move g holds %q, want f", got)
	}
	if _, err := f.c.Move(ctx, api.MoveRequest{From: "a", To: "moved"}); err != nil {
		t.Errorf("Move dir: %v", err)
	}
	_, err = f.c.Move(ctx, api.MoveRequest{From: "nope", To: "x"})
	wantErr(t, "move missing", err, errdefs.ErrNotFound, "file_not_found")
	_, err = f.c.Move(ctx, api.MoveRequest{From: "moved", To: "moved/b/inside"})
	wantErr(t, "move into itself", err, errdefs.ErrInvalid, "invalid_path")

	// Remove: a non-empty dir needs recursive; the root cannot go.
	err = f.c.Remove(ctx, "moved", false)
	wantErr(t, "remove non-empty", err, errdefs.ErrConflict, "directory_not_empty")
	symlink(t, f.work, filepath.Join(f.work, "moved", "b", "loop"))
	if err := f.c.Remove(ctx, "moved", true); err != nil {
		t.Errorf("recursive remove: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.work, "moved")); !os.IsNotExist(err) {
		t.Errorf("moved still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.work, "g")); err != nil {
		t.Errorf("recursive remove followed a symlink: %v", err)
	}
	if err := f.c.Remove(ctx, "g", false); err != nil {
		t.Errorf("remove file: %v", err)
	}
	err = f.c.Remove(ctx, "g", false)
	wantErr(t, "remove missing", err, errdefs.ErrNotFound, "file_not_found")
	err = f.c.Remove(ctx, f.root, true)
	wantErr(t, "remove root", err, errdefs.ErrInvalid, "invalid_path")
	if _, err := os.Stat(f.root); err != nil {
		t.Errorf("root is gone: %v", err)
	}
}
