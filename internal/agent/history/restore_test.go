package history

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/testutil"
)

// TestRestoreDoesNotWriteThroughPlantedSymlinks: whatever the sandbox
// plants in the tree before an undo (a directory of the checkpoint
// swapped for a symlink out of the tree, a file swapped for a symlink to
// a file outside), the restore replaces the links and touches nothing
// outside.
func TestRestoreDoesNotWriteThroughPlantedSymlinks(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Join(outside, "victim"), "outside, must stay")
	write(t, filepath.Join(outside, "deep", "victim"), "outside too")

	write(t, filepath.Join(tree, "sub", "victim"), "inside")
	write(t, filepath.Join(tree, "nested", "deep", "victim"), "inside, deeper")
	write(t, filepath.Join(tree, "file"), "a file of the tree")
	cp := checkpoint(t, s, tree, KindTask)
	want := snapshot(t, tree)
	outsideBefore := snapshot(t, outside)

	must(t, os.RemoveAll(filepath.Join(tree, "sub")))
	must(t, os.Symlink(outside, filepath.Join(tree, "sub")))
	must(t, os.RemoveAll(filepath.Join(tree, "nested", "deep")))
	must(t, os.Symlink(filepath.Join(outside, "deep"), filepath.Join(tree, "nested", "deep")))
	must(t, os.Remove(filepath.Join(tree, "file")))
	must(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(tree, "file")))
	// A link with a relative way out, where the checkpoint has nothing.
	must(t, os.Symlink("../outside", filepath.Join(tree, "planted")))

	restore(t, s, tree, cp.ID)
	sameTree(t, "outside", outsideBefore, snapshot(t, outside))
	sameTree(t, "tree", want, snapshot(t, tree))
}

// everyCase is a tree with each kind of entry a restore must bring back.
func everyCase(t *testing.T, dir string) {
	t.Helper()
	owner := os.Getuid()
	if owner == 0 {
		owner = 1000 // as root, check that owners come back too
	}
	bin := randomBytes(64 << 10)
	copy(bin[100:], make([]byte, 5000)) // NULs, more than a block
	at := time.Date(2024, 2, 3, 4, 5, 6, 789, time.UTC)
	e := func(p string, typ testutil.EntryType, mode uint32, data string) testutil.TreeEntry {
		return testutil.TreeEntry{Path: p, Type: typ, Mode: mode, UID: owner, GID: owner, Data: []byte(data), Mtime: at}
	}
	link := func(p, target string) testutil.TreeEntry {
		return testutil.TreeEntry{Path: p, Type: testutil.TypeSymlink, Target: target, UID: owner, GID: owner, Mtime: at}
	}
	entries := []testutil.TreeEntry{
		e("src", testutil.TypeDir, 0o755, ""),
		e("src/main.go", testutil.TypeFile, 0o644, "package main\n"),
		e("src/lib", testutil.TypeDir, 0o750, ""),
		e("src/lib/deep", testutil.TypeDir, 0o755, ""),
		e("src/lib/deep/x.txt", testutil.TypeFile, 0o640, "deep"),
		e("empty", testutil.TypeDir, 0o700, ""),
		{Path: "blob.bin", Type: testutil.TypeFile, Mode: 0o600, UID: owner, GID: owner, Data: bin, Mtime: at},
		e("run.sh", testutil.TypeFile, 0o755, "#!/bin/sh\necho hi\n"),
		e("zero", testutil.TypeFile, 0o644, ""),
		link("rel-link", "src/main.go"),
		link("abs-link", "/etc/passwd"),
		link("dangling", "nowhere/at/all"),
		e("file-then-dir", testutil.TypeFile, 0o644, "I was a file"),
		e("dir-then-file", testutil.TypeDir, 0o755, ""),
		e("dir-then-file/inner", testutil.TypeFile, 0o644, "inner"),
		e("link-then-dir", testutil.TypeDir, 0o755, ""),
		e("gone-dir", testutil.TypeDir, 0o755, ""),
		e("gone-dir/a", testutil.TypeFile, 0o644, "a"),
		e("gone-dir/sub", testutil.TypeDir, 0o755, ""),
		e("gone-dir/sub/b", testutil.TypeFile, 0o644, "b"),
		e("gone-file", testutil.TypeFile, 0o644, "gone"),
		e("-sorts-before-dot", testutil.TypeFile, 0o644, "dash"),
	}
	if os.Getuid() == 0 {
		// Only root writes into a directory without write permission.
		entries = append(entries,
			e("ro", testutil.TypeDir, 0o555, ""),
			e("ro/file", testutil.TypeFile, 0o444, "read only"),
			e("setgid", testutil.TypeDir, 0o2775, ""),
		)
	}
	testutil.MakeTree(t, dir, entries)
}

// mutate changes every entry everyCase made.
func mutate(t *testing.T, dir string) {
	t.Helper()
	p := func(rel string) string { return filepath.Join(dir, rel) }
	write(t, p("src/main.go"), "package main // changed\n")
	write(t, p("src/lib/deep/x.txt"), "deep")
	must(t, os.Chmod(p("run.sh"), 0o644))
	must(t, os.Truncate(p("blob.bin"), 1000))
	must(t, os.Remove(p("gone-file")))
	must(t, os.RemoveAll(p("gone-dir")))
	must(t, os.Remove(p("file-then-dir")))
	write(t, p("file-then-dir/now-a-file-inside"), "x")
	must(t, os.RemoveAll(p("dir-then-file")))
	write(t, p("dir-then-file"), "now a file")
	must(t, os.RemoveAll(p("link-then-dir")))
	must(t, os.Symlink("src", p("link-then-dir")))
	must(t, os.Remove(p("rel-link")))
	must(t, os.Symlink("src/lib", p("rel-link")))
	must(t, os.Remove(p("dangling")))
	must(t, os.Remove(p("abs-link")))
	write(t, p("abs-link"), "a file now")
	must(t, os.Remove(p("empty")))
	write(t, p("new.txt"), "new")
	write(t, p("newdir/nested/y"), "new nested")
	must(t, os.Mkdir(p("new-empty"), 0o755))
	if os.Getuid() == 0 {
		must(t, os.Chown(p("src/main.go"), 0, 0))
		must(t, os.Lchown(p("src"), 0, 0))
		must(t, os.Chmod(p("ro"), 0o755))
		write(t, p("ro/file"), "writable now")
		must(t, os.Chmod(p("setgid"), 0o755))
	}
}

func TestRestoreEveryCase(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	everyCase(t, tree)
	cp := checkpoint(t, s, tree, KindTask)
	want := snapshot(t, tree)
	if cp.ID != "00000001" || cp.Kind != KindTask || cp.Parent != "" || cp.Files == 0 || cp.Bytes == 0 {
		t.Errorf("checkpoint %+v", cp)
	}

	mutate(t, tree)
	res := restore(t, s, tree, cp.ID)
	sameTree(t, "restored", want, snapshot(t, tree))
	if res.Restored.ID != cp.ID || res.PreUndo.Kind != KindPreUndo || res.PreUndo.Parent != cp.ID {
		t.Errorf("restore result %+v", res)
	}
	changes := map[string]Change{}
	for _, c := range res.Changes {
		changes[c.Path] = c
	}
	for _, w := range []Change{
		{Path: "src/main.go", Change: ChangeModified, Type: TypeFile},
		{Path: "run.sh", Change: ChangeModified, Type: TypeFile},
		{Path: "gone-file", Change: ChangeAdded, Type: TypeFile},
		{Path: "gone-dir/sub/b", Change: ChangeAdded, Type: TypeFile},
		{Path: "new.txt", Change: ChangeDeleted, Type: TypeFile},
		{Path: "newdir/nested", Change: ChangeDeleted, Type: TypeDir},
		{Path: "file-then-dir", Change: ChangeModified, Type: TypeFile},
		{Path: "dir-then-file", Change: ChangeModified, Type: TypeDir},
		{Path: "link-then-dir", Change: ChangeModified, Type: TypeDir},
		{Path: "rel-link", Change: ChangeModified, Type: TypeSymlink},
		{Path: "dangling", Change: ChangeAdded, Type: TypeSymlink},
	} {
		if changes[w.Path] != w {
			t.Errorf("change of %s = %+v, want %+v", w.Path, changes[w.Path], w)
		}
	}
	if _, ok := changes["src/lib/deep/x.txt"]; ok {
		t.Errorf("a file rewritten with the same content is listed as changed")
	}
	if !slices.IsSortedFunc(res.Changes, func(a, b Change) int { return cmpString(a.Path, b.Path) }) {
		t.Errorf("changes are not sorted by path: %v", res.Changes)
	}

	// Restoring again changes nothing.
	res = restore(t, s, tree, cp.ID)
	if len(res.Changes) != 0 {
		t.Errorf("a second restore changed %v", res.Changes)
	}
	sameTree(t, "restored twice", want, snapshot(t, tree))
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestUndoTheUndo: the pre-undo checkpoint a restore takes brings the
// tree back to what the restore replaced.
func TestUndoTheUndo(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	everyCase(t, tree)
	cp := checkpoint(t, s, tree, KindTask)
	mutate(t, tree)
	mutated := snapshot(t, tree)

	res := restore(t, s, tree, cp.ID)
	restored := snapshot(t, tree)
	undo := restore(t, s, tree, res.PreUndo.ID)
	sameTree(t, "undo of the undo", mutated, snapshot(t, tree))
	// And once more, by steps: the newest is the pre-undo checkpoint of
	// the second restore, the tree as the first restore left it.
	if got, err := s.Restore(context.Background(), openTree(t, tree), "", 1); err != nil {
		t.Fatal(err)
	} else if got.Restored.ID != undo.PreUndo.ID {
		t.Errorf("steps 1 restored %s, want %s", got.Restored.ID, undo.PreUndo.ID)
	}
	sameTree(t, "undo of the undo of the undo", restored, snapshot(t, tree))
}

// TestCrashMidRestore: a restore cut short (here, a directory it cannot
// finish) leaves a tree that restoring again makes whole.
func TestCrashMidRestore(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	everyCase(t, tree)
	cp := checkpoint(t, s, tree, KindTask)
	want := snapshot(t, tree)
	mutate(t, tree)

	// A damaged blob stops the restore part way.
	m, err := s.readManifest(cp.ID)
	must(t, err)
	var victim *Entry
	for i := range m.entries {
		if m.entries[i].Path == "src/main.go" {
			victim = &m.entries[i]
		}
	}
	good, err := os.ReadFile(s.blobPath(victim.SHA256))
	must(t, err)
	must(t, os.Chmod(s.blobPath(victim.SHA256), 0o600))
	must(t, os.WriteFile(s.blobPath(victim.SHA256), []byte("damaged"), 0o600))
	_, err = s.Restore(context.Background(), openTree(t, tree), cp.ID, 0)
	if err == nil {
		t.Fatal("restore with a damaged blob succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(tree, "src/main.go")); bytes.Equal(got, []byte("damaged")) {
		t.Error("a damaged blob landed in the tree")
	}
	names, _ := os.ReadDir(filepath.Join(tree, "src"))
	for _, n := range names {
		if isTemp(n.Name()) {
			t.Errorf("temporary file %s left behind", n.Name())
		}
	}
	must(t, os.WriteFile(s.blobPath(victim.SHA256), good, 0o400))
	restore(t, s, tree, cp.ID)
	sameTree(t, "restored after a failed restore", want, snapshot(t, tree))
}

// TestOtherTypesSkipped: FIFOs and sockets are reported, not recorded,
// and a restore leaves them alone.
func TestOtherTypesSkipped(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	write(t, filepath.Join(tree, "a"), "a")
	must(t, unix.Mkfifo(filepath.Join(tree, "fifo"), 0o644))
	// Socket paths are short; listen from inside the tree.
	wd, _ := os.Getwd()
	must(t, os.Chdir(tree))
	l, err := net.Listen("unix", "sock")
	os.Chdir(wd)
	must(t, err)
	defer l.Close()

	cp := checkpoint(t, s, tree, KindManual)
	got := map[string]string{}
	for _, sk := range cp.Skipped {
		got[sk.Path] = sk.Reason
	}
	if got["fifo"] != "fifo" || got["sock"] != "socket" || len(got) != 2 {
		t.Errorf("skipped %v", cp.Skipped)
	}
	must(t, os.Remove(filepath.Join(tree, "a")))
	restore(t, s, tree, cp.ID)
	for _, n := range []string{"a", "fifo", "sock"} {
		if _, err := os.Lstat(filepath.Join(tree, n)); err != nil {
			t.Errorf("%s after restore: %v", n, err)
		}
	}
}

// TestRestoreIntoEmptiedTree: a tree whose every entry went comes back.
func TestRestoreIntoEmptiedTree(t *testing.T) {
	s := newStore(t, Options{})
	tree := newTree(t)
	everyCase(t, tree)
	cp := checkpoint(t, s, tree, KindTask)
	want := snapshot(t, tree)
	des, err := os.ReadDir(tree)
	must(t, err)
	for _, de := range des {
		if de.Name() == "ro" {
			os.Chmod(filepath.Join(tree, "ro"), 0o755)
		}
		must(t, os.RemoveAll(filepath.Join(tree, de.Name())))
	}
	restore(t, s, tree, cp.ID)
	sameTree(t, "restored into an empty tree", want, snapshot(t, tree))
}
