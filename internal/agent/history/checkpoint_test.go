package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func paths(m *manifest) []string {
	var out []string
	for _, e := range m.entries {
		out = append(out, e.Path)
	}
	return out
}

func TestExcludesUntouched(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	p := func(rel string) string { return filepath.Join(tree, rel) }
	write(t, p("app.js"), "v1")
	write(t, p("node_modules/pkg/index.js"), "dep v1")
	write(t, p("web/node_modules/x/y.js"), "nested dep")
	write(t, p(".venv/bin/python"), "venv")
	write(t, p("py/__pycache__/a.pyc"), "bytecode")
	write(t, p(".cache/c"), "cache")
	write(t, p("web/index.html"), "<html>")
	cp := checkpoint(t, s, tree, KindTask)
	for _, path := range paths(s.last) {
		for _, ex := range DefaultExcludes {
			if strings.Contains("/"+path+"/", "/"+ex+"/") {
				t.Errorf("checkpoint holds excluded %s", path)
			}
		}
	}

	write(t, p("app.js"), "v2")
	write(t, p("node_modules/pkg/index.js"), "dep v2")
	write(t, p("node_modules/new/index.js"), "new dep")
	write(t, p("later/node_modules/z/z.js"), "excluded, below a new directory")
	write(t, p("later/other.txt"), "not excluded")
	excluded := snapshot(t, p("node_modules"))

	changes, err := s.Diff(context.Background(), openTree(t, tree), cp.ID, "")
	must(t, err)
	want := []Change{
		{Path: "app.js", Change: ChangeModified, Type: TypeFile},
		{Path: "later", Change: ChangeAdded, Type: TypeDir},
		{Path: "later/other.txt", Change: ChangeAdded, Type: TypeFile},
	}
	if d := cmp.Diff(want, changes); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}

	restore(t, s, tree, cp.ID)
	if b, _ := os.ReadFile(p("app.js")); string(b) != "v1" {
		t.Errorf("app.js = %q after restore", b)
	}
	sameTree(t, "node_modules", excluded, snapshot(t, p("node_modules")))
	if b, _ := os.ReadFile(p("later/node_modules/z/z.js")); string(b) != "excluded, below a new directory" {
		t.Errorf("an excluded directory below a removed one went: %q", b)
	}
	if _, err := os.Stat(p("later/other.txt")); !os.IsNotExist(err) {
		t.Errorf("later/other.txt after restore: %v", err)
	}
	for _, rel := range []string{"web/node_modules/x/y.js", ".venv/bin/python", "py/__pycache__/a.pyc", ".cache/c"} {
		if _, err := os.Stat(p(rel)); err != nil {
			t.Errorf("%s after restore: %v", rel, err)
		}
	}
}

func TestConfiguredExcludes(t *testing.T) {
	s := newStore(t, Options{Excludes: []string{"build"}})
	tree := newTree(t)
	write(t, filepath.Join(tree, "node_modules/a"), "kept now")
	write(t, filepath.Join(tree, "build/out"), "skipped now")
	checkpoint(t, s, tree, KindTask)
	got := strings.Join(paths(s.last), " ")
	if got != ". node_modules node_modules/a" {
		t.Errorf("entries %q", got)
	}
	if _, err := Open(t.TempDir(), Options{Excludes: []string{"a/b"}}); err == nil {
		t.Error("an exclude with a slash was accepted")
	}
}

// TestStoreInsideTree: a store inside the tree it tracks is neither
// recorded nor touched by a restore.
func TestStoreInsideTree(t *testing.T) {
	tree := newTree(t)
	s, err := Open(filepath.Join(tree, "var/lib/history"), Options{})
	must(t, err)
	s.racy = 0
	write(t, filepath.Join(tree, "a"), "a")
	cp := checkpoint(t, s, tree, KindTask)
	if got := strings.Join(paths(s.last), " "); got != ". a var var/lib" {
		t.Errorf("entries %q", got)
	}
	must(t, os.RemoveAll(filepath.Join(tree, "var/lib/other")))
	write(t, filepath.Join(tree, "b"), "b")
	restore(t, s, tree, cp.ID)
	if len(s.List()) != 2 {
		t.Errorf("the store lost checkpoints: %v", s.List())
	}
	// The store still works: its blobs are there.
	restore(t, s, tree, cp.ID)
}

func TestUnchangedTreeReusesHashes(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	var total int64
	for i := range 20 {
		data := randomBytes(1000 + i)
		total += int64(len(data))
		must(t, os.WriteFile(filepath.Join(tree, fmt.Sprintf("f%02d", i)), data, 0o644))
	}
	checkpoint(t, s, tree, KindTask)
	if got := s.hashed.Swap(0); got != total {
		t.Errorf("first checkpoint hashed %d bytes, want %d", got, total)
	}
	blobs := countBlobs(t, s)
	cp := checkpoint(t, s, tree, KindTask)
	if got := s.hashed.Swap(0); got != 0 {
		t.Errorf("checkpoint of an unchanged tree hashed %d bytes", got)
	}
	if cp.Files != 20 || cp.Bytes != total || countBlobs(t, s) != blobs {
		t.Errorf("checkpoint %+v, %d blobs, want %d", cp, countBlobs(t, s), blobs)
	}
	write(t, filepath.Join(tree, "f03"), "changed")
	checkpoint(t, s, tree, KindTask)
	if got := s.hashed.Swap(0); got != int64(len("changed")) {
		t.Errorf("checkpoint after one change hashed %d bytes, want %d", got, len("changed"))
	}
	// A restart keeps the hashes: they are in the manifest.
	s2 := reopen(t, s)
	checkpoint(t, s2, tree, KindTask)
	if got := s2.hashed.Load(); got != 0 {
		t.Errorf("checkpoint after a reopen hashed %d bytes", got)
	}
}

// TestRacyFilesAreReadAgain: a file changed within the racy window of a
// checkpoint is read again by the next, whatever its stat says.
func TestRacyFilesAreReadAgain(t *testing.T) {
	s := newStore(t, Options{})
	s.racy = time.Hour
	tree := newTree(t)
	write(t, filepath.Join(tree, "a"), "0123456789")
	checkpoint(t, s, tree, KindTask)
	s.hashed.Store(0)
	checkpoint(t, s, tree, KindTask)
	if got := s.hashed.Load(); got != 10 {
		t.Errorf("hashed %d bytes of a racy file, want 10", got)
	}
}

func TestRetentionKeep(t *testing.T) {
	s := newStore(t, Options{Keep: 3})
	tree := newTree(t)
	write(t, filepath.Join(tree, "same"), "in every checkpoint")
	for i := 1; i <= 5; i++ {
		write(t, filepath.Join(tree, "v.txt"), fmt.Sprintf("version %d", i))
		checkpoint(t, s, tree, KindTask)
	}
	var ids []string
	for _, c := range s.List() {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, " "); got != "00000005 00000004 00000003" {
		t.Errorf("checkpoints %s", got)
	}
	for i := 1; i <= 5; i++ {
		_, err := os.Stat(s.blobPath(sum(fmt.Sprintf("version %d", i))))
		if gone := os.IsNotExist(err); gone != (i <= 2) {
			t.Errorf("blob of version %d: %v", i, err)
		}
	}
	if n := countBlobs(t, s); n != 4 {
		t.Errorf("%d blobs on disk, want 4", n)
	}
	if _, err := os.Stat(s.manifestPath("00000002")); !os.IsNotExist(err) {
		t.Errorf("manifest of a dropped checkpoint: %v", err)
	}
	_, err := s.Restore(context.Background(), openTree(t, tree), "00000001", 0)
	wantCode(t, "restore of a dropped checkpoint", err, errdefs.ErrNotFound, "checkpoint_not_found")
}

func TestRetentionBudget(t *testing.T) {
	s := newStore(t, Options{MaxBytes: 2500})
	tree := newTree(t)
	a, b := randomBytes(2000), randomBytes(2000)
	must(t, os.WriteFile(filepath.Join(tree, "f"), a, 0o644))
	first := checkpoint(t, s, tree, KindTask)
	must(t, os.WriteFile(filepath.Join(tree, "f"), b, 0o644))
	second := checkpoint(t, s, tree, KindTask)
	// Both are 4000 bytes of blobs: the oldest goes, never the newest.
	if l := s.List(); len(l) != 1 || l[0].ID != second.ID {
		t.Errorf("checkpoints %v, want only %s", l, second.ID)
	}
	if _, err := os.Stat(s.blobPath(sum(string(a)))); !os.IsNotExist(err) {
		t.Errorf("blob of %s: %v", first.ID, err)
	}
	if s.bytes != 2000 || countBlobs(t, s) != 1 {
		t.Errorf("store holds %d bytes in %d blobs", s.bytes, countBlobs(t, s))
	}

	// A tree that cannot fit fails, and leaves nothing behind.
	must(t, os.WriteFile(filepath.Join(tree, "g"), randomBytes(1000), 0o644))
	_, err := s.Checkpoint(context.Background(), openTree(t, tree), KindTask, "")
	wantCode(t, "checkpoint over the budget", err, errdefs.ErrTooLarge, "history_too_large")
	if l := s.List(); len(l) != 1 || countBlobs(t, s) != 1 {
		t.Errorf("after a failed checkpoint: %v, %d blobs", l, countBlobs(t, s))
	}
}

// TestCrashBeforeManifest: blobs written but no manifest renamed into
// place (a crash in between) is no checkpoint, and Open collects the
// blobs and the temporary files.
func TestCrashBeforeManifest(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "f"), "one")
	first := checkpoint(t, s, tree, KindTask)
	write(t, filepath.Join(tree, "f"), "two")
	second := checkpoint(t, s, tree, KindTask)
	// As if the rename of the second's manifest never happened.
	must(t, os.Rename(s.manifestPath(second.ID), filepath.Join(s.dir, "tmp", "manifest-123")))
	must(t, os.WriteFile(filepath.Join(s.dir, "tmp", "blob-456"), []byte("half a blob"), 0o600))

	s2 := reopen(t, s)
	if l := s2.List(); len(l) != 1 || l[0].ID != first.ID {
		t.Errorf("checkpoints after the crash: %v", l)
	}
	if _, err := os.Stat(s2.blobPath(sum("two"))); !os.IsNotExist(err) {
		t.Errorf("blob of the invisible checkpoint: %v", err)
	}
	if des, _ := os.ReadDir(filepath.Join(s2.dir, "tmp")); len(des) != 0 {
		t.Errorf("temporary files left: %v", des)
	}
	if next := checkpoint(t, s2, tree, KindTask); next.ID != second.ID || next.Parent != first.ID {
		t.Errorf("next checkpoint %+v", next)
	}
}

// TestDamagedManifestIgnored: a manifest that does not read is no
// checkpoint.
func TestDamagedManifestIgnored(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "f"), "one")
	first := checkpoint(t, s, tree, KindTask)
	second := checkpoint(t, s, tree, KindTask)
	must(t, os.WriteFile(s.manifestPath(second.ID), []byte(`{"version":1,"id":"00000002"}`+"\n"+`{"path":"../escape","type":"file"}`), 0o600))
	s2 := reopen(t, s)
	if l := s2.List(); len(l) != 1 || l[0].ID != first.ID {
		t.Errorf("checkpoints: %v", l)
	}
	if _, err := os.Stat(s2.manifestPath(second.ID) + ".damaged"); err != nil {
		t.Errorf("the damaged manifest is not kept aside: %v", err)
	}
	if next := checkpoint(t, s2, tree, KindTask); next.ID != second.ID {
		t.Errorf("next checkpoint %s, want %s", next.ID, second.ID)
	}
}

func TestDiffBetweenCheckpoints(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "keep"), "k")
	write(t, filepath.Join(tree, "edit"), "1")
	write(t, filepath.Join(tree, "gone/x"), "x")
	a := checkpoint(t, s, tree, KindTask)
	write(t, filepath.Join(tree, "edit"), "2")
	must(t, os.RemoveAll(filepath.Join(tree, "gone")))
	must(t, os.Symlink("keep", filepath.Join(tree, "new-link")))
	must(t, os.Chmod(filepath.Join(tree, "keep"), 0o600))
	b := checkpoint(t, s, tree, KindTask)

	got, err := s.Diff(context.Background(), nil, a.ID, b.ID)
	must(t, err)
	want := []Change{
		{Path: "edit", Change: ChangeModified, Type: TypeFile},
		{Path: "gone", Change: ChangeDeleted, Type: TypeDir},
		{Path: "gone/x", Change: ChangeDeleted, Type: TypeFile},
		{Path: "keep", Change: ChangeModified, Type: TypeFile},
		{Path: "new-link", Change: ChangeAdded, Type: TypeSymlink},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	// To the current tree, which is b: nothing; touching is no change.
	must(t, os.Chtimes(filepath.Join(tree, "edit"), time.Now(), time.Now().Add(time.Hour)))
	if got, err := s.Diff(context.Background(), openTree(t, tree), b.ID, ""); err != nil || len(got) != 0 {
		t.Errorf("diff to the current tree: %v, %v", got, err)
	}
	_, err = s.Diff(context.Background(), nil, "00000099", "")
	wantCode(t, "diff from an unknown checkpoint", err, errdefs.ErrNotFound, "checkpoint_not_found")
}

func TestSelect(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	_, err := s.Select("", 1)
	wantCode(t, "steps in an empty store", err, errdefs.ErrNotFound, "checkpoint_not_found")
	for range 3 {
		checkpoint(t, s, tree, KindTask)
	}
	for steps, want := range map[int]string{1: "00000003", 3: "00000001"} {
		if c, err := s.Select("", steps); err != nil || c.ID != want {
			t.Errorf("steps %d: %s, %v; want %s", steps, c.ID, err, want)
		}
	}
	_, err = s.Select("", 4)
	wantCode(t, "steps past the oldest", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = s.Select("00000007", 0)
	wantCode(t, "unknown id", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = s.Select("../../etc", 0)
	wantCode(t, "id that is a path", err, errdefs.ErrNotFound, "checkpoint_not_found")
	_, err = s.Select("00000001", 1)
	wantCode(t, "id and steps", err, errdefs.ErrInvalid, "invalid_parameter")
	_, err = s.Select("", 0)
	wantCode(t, "neither", err, errdefs.ErrInvalid, "invalid_parameter")
	_, err = s.Checkpoint(context.Background(), openTree(t, tree), "Not A Kind", "")
	wantCode(t, "bad kind", err, errdefs.ErrInvalid, "invalid_parameter")
}

func TestLimits(t *testing.T) {
	tree := newTree(t)
	write(t, filepath.Join(tree, "small"), "0123")
	write(t, filepath.Join(tree, "dir/big"), "0123456789abcdef")
	s := newStore(t, Options{MaxFileBytes: 10})
	_, err := s.Checkpoint(context.Background(), openTree(t, tree), KindTask, "")
	wantCode(t, "file over the limit", err, errdefs.ErrTooLarge, "file_too_large")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(tree, "dir/big")) {
		t.Errorf("error %v does not name the file", err)
	}
	if len(s.List()) != 0 || countBlobs(t, s) != 0 {
		t.Errorf("a failed checkpoint left %v and %d blobs", s.List(), countBlobs(t, s))
	}
	s = newStore(t, Options{MaxEntries: 3})
	_, err = s.Checkpoint(context.Background(), openTree(t, tree), KindTask, "")
	wantCode(t, "too many entries", err, errdefs.ErrTooLarge, "history_too_large")
}

// TestReopenKeepsHistory: what an agent restart finds is what it left.
func TestReopenKeepsHistory(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "f"), "before")
	cp := checkpoint(t, s, tree, KindTask)
	want := snapshot(t, tree)
	write(t, filepath.Join(tree, "f"), "after")
	s2 := reopen(t, s)
	if d := cmp.Diff(s.List(), s2.List()); d != "" {
		t.Errorf("checkpoints after a reopen (-want +got):\n%s", d)
	}
	restore(t, s2, tree, cp.ID)
	sameTree(t, "restored after a reopen", want, snapshot(t, tree))
}

// TestConcurrentCheckpoints: one operation at a time; each gets its id.
func TestConcurrentCheckpoints(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "f"), "x")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			cp, err := s.Checkpoint(context.Background(), openTree(t, tree), KindTask, "")
			if err != nil {
				t.Error(err)
			}
			ids[i] = cp.ID
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("id %s given twice", id)
		}
		seen[id] = true
	}
	if len(s.List()) != len(ids) {
		t.Errorf("%d checkpoints, want %d", len(s.List()), len(ids))
	}
}

func TestCanceledCheckpoint(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Checkpoint(ctx, openTree(t, tree), KindTask, "")
	wantCode(t, "canceled", err, errdefs.ErrUnavailable, "canceled")
}

func sum(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}
