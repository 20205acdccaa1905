package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/agent/files"
)

// TestWriteLayer: what a layer of a root holds is exactly what changed
// since the baseline, in OCI form: new and changed entries, and a
// whiteout for the topmost of each thing removed.
func TestWriteLayer(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"etc", "keep/sub", "gone/deep", "swap", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		"etc/passwd": "root\n", "etc/shells": "/bin/sh\n", "keep/sub/same": "same\n",
		"gone/deep/file": "x", "swap/inner": "y", "usr/bin/tool": "tool", "chmodded": "c",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The image's files are older than the agent.
	time.Sleep(30 * time.Millisecond)
	root, err := files.OpenRoot(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	base, err := files.RecordBaseline(root)
	if err != nil {
		t.Fatal(err)
	}
	if base.Paths() != 15 {
		t.Errorf("the baseline holds %d paths; want 15", base.Paths())
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := func(p string) string { return filepath.Join(dir, p) }
	must(os.WriteFile(at("etc/passwd"), []byte("root\nuser\n"), 0o644))
	must(os.Remove(at("etc/shells")))
	must(os.RemoveAll(at("gone")))
	must(os.RemoveAll(at("swap")))
	must(os.Symlink("/elsewhere", at("swap")))
	must(os.Chmod(at("chmodded"), 0o600))
	must(os.MkdirAll(at("new/dir"), 0o750))
	must(os.WriteFile(at("new/dir/file"), []byte("new"), 0o640))
	must(os.Link(at("new/dir/file"), at("new/hard")))
	must(syscall.Mkfifo(at("new/fifo"), 0o600))
	must(os.Remove(at("usr/bin/tool")))
	must(os.WriteFile(at("usr/bin/tool"), []byte("tool v2"), 0o755))

	svc := files.New(files.Config{Root: root, MaxFileBytes: 1 << 20, MaxTarBytes: 1 << 20})
	var buf bytes.Buffer
	st, err := svc.WriteLayer(&buf, base)
	if err != nil {
		t.Fatal(err)
	}
	got := readTar(t, &buf)
	// The directories whose entries changed come too: their own ctime
	// moved.
	want := []tarEntry{
		{Name: "chmodded", Body: "c", Type: '0'},
		{Name: "etc/", Type: '5'},
		{Name: "etc/passwd", Body: "root\nuser\n", Type: '0'},
		{Name: "new/", Type: '5'},
		{Name: "new/dir/", Type: '5'},
		{Name: "new/dir/file", Body: "new", Type: '0'},
		{Name: "new/fifo", Type: '6'},
		{Name: "new/hard", Link: "new/dir/file", Type: '1'},
		{Name: "swap", Link: "/elsewhere", Type: '2'},
		{Name: "usr/bin/", Type: '5'},
		{Name: "usr/bin/tool", Body: "tool v2", Type: '0'},
		// Whiteouts, after: etc/shells, and gone (not what it held);
		// swap/inner goes with the directory the link replaced.
		{Name: ".wh.gone", Type: '0'},
		{Name: "etc/.wh.shells", Type: '0'},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the layer (-want +got):\n%s", d)
	}
	if st.Entries != int64(len(want)) || st.Bytes != int64(len("c")+len("root\nuser\n")+len("new")+len("tool v2")) {
		t.Errorf("stats = %+v; want %d entries and the files' bytes", st, len(want))
	}

	// Nothing changed since: a second layer holds what the first did.
	var again bytes.Buffer
	if _, err := svc.WriteLayer(&again, base); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, readTar(t, &again)); d != "" {
		t.Errorf("a second layer differs (-first +second):\n%s", d)
	}
}
