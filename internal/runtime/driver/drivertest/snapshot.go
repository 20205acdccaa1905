package drivertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// snapshotScript leaves in a sandbox's root what a snapshot must keep
// exactly: text, every byte value, a symlink, modes, a directory tree, a
// file of the template's deleted and one of the template's changed.
const snapshotScript = `set -e
mkdir -p /workspace/deep/er
printf 'kept text\n' > /workspace/deep/er/text
i=0; while [ $i -lt 256 ]; do printf "\\$(printf '%03o' $i)"; i=$((i+1)); done > /workspace/bytes
ln -s deep/er/text /workspace/link
chmod 0600 /workspace/deep/er/text
chmod 0750 /workspace/deep
rm -f /etc/shells
echo changed > /etc/hostname.extra
`

// snapshotView prints what snapshotScript made, to compare sandboxes by.
const snapshotView = `cd /workspace
cat deep/er/text; od -An -tx1 bytes | tr -d ' \n' | cksum
readlink link; stat -c '%a %n' deep deep/er/text
test -e /etc/shells && echo shells back || echo shells gone
cat /etc/hostname.extra 2>/dev/null || echo no extra
ls after 2>/dev/null || echo no after
`

// testSnapshot copies a running sandbox's files (drivers that are
// Snapshotters): a restore gives back exactly what was captured, undoing
// what came after; a sandbox started from the copy has the same files
// under its own name, and the two go their own ways.
func testSnapshot(t *testing.T, s Suite) {
	d := s.New(t)
	sn, ok := d.(driver.Snapshotter)
	if !ok || !d.Capabilities().Snapshots {
		t.Skip("the driver cannot copy sandboxes here")
	}
	ctx := context.Background()
	sp := spec(api.Limits{MemoryMB: 256, Pids: 128})
	sp.Root = d.Capabilities().RootUser
	a := create(t, d, sp)
	sh(t, a, snapshotScript)
	want := sh(t, a, snapshotView)
	// A process busy writing while the copy is taken.
	sh(t, a, "(while :; do echo x >> /tmp/busy; done) >/dev/null 2>&1 &")

	dir := filepath.Join(t.TempDir(), "snap")
	st, err := sn.Snapshot(ctx, a.handle, dir)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	t.Cleanup(func() { sn.RemoveSnapshot(dir) })
	t.Logf("snapshot: %+v", st)
	if st.Pause <= 0 || st.Method == "" {
		t.Errorf("Snapshot of a running sandbox = %+v; want its pause and method", st)
	}

	// After the snapshot: changes a restore must undo.
	sh(t, a, "echo later > /workspace/after; rm /workspace/bytes; echo other > /workspace/deep/er/text; touch /etc/shells")
	h, err := sn.Restore(ctx, a.handle, dir)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	a.reattach(h)
	if got := sh(t, a, snapshotView); got != want {
		t.Errorf("after Restore:\n%s\nwant, as snapshotted:\n%s", got, want)
	}
	if got := strings.TrimSpace(sh(t, a, "hostname; cat /etc/hostname")); got != a.id+"\n"+a.id {
		t.Errorf("after Restore the sandbox is named %q; want %s", got, a.id)
	}

	// A sandbox from the snapshot.
	bs := spec(api.Limits{MemoryMB: 256, Pids: 128})
	bs.Root, bs.Snapshot = sp.Root, dir
	b := create(t, d, bs)
	if got := sh(t, b, snapshotView); got != want {
		t.Errorf("a sandbox from the snapshot:\n%s\nwant:\n%s", got, want)
	}
	if got := strings.TrimSpace(sh(t, b, "cat /etc/hostname")); got != b.id {
		t.Errorf("the sandbox from the snapshot has /etc/hostname %q; want its own id %s", got, b.id)
	}
	sh(t, b, "echo b > /workspace/only-b")
	sh(t, a, "echo a > /workspace/only-a")
	if got := sh(t, a, "ls /workspace/only-b 2>/dev/null; ls /workspace/only-a"); got != "/workspace/only-a\n" {
		t.Errorf("the sandboxes share files: %q", got)
	}
	// A sandbox that may take the snapshot's files rather than a copy
	// (a fork's last): the same files, and the snapshot can still be
	// removed.
	taken := filepath.Join(t.TempDir(), "taken")
	if _, err := sn.Snapshot(ctx, b.handle, taken); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	cs := spec(api.Limits{MemoryMB: 256, Pids: 128})
	cs.Root, cs.Snapshot, cs.TakeSnapshot = sp.Root, taken, true
	c := create(t, d, cs)
	if got := sh(t, c, "cat /workspace/only-b; cat /workspace/deep/er/text; hostname"); got != "b\nkept text\n"+c.id+"\n" {
		t.Errorf("a sandbox that took the snapshot: %q", got)
	}
	if err := sn.RemoveSnapshot(taken); err != nil {
		t.Errorf("RemoveSnapshot of a taken snapshot: %v", err)
	}
	if err := sn.RemoveSnapshot(dir); err != nil {
		t.Fatalf("RemoveSnapshot: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the snapshot's files are still there: %v", err)
	}
	// The sandbox from it does not need it.
	if got := sh(t, b, "cat /workspace/deep/er/text"); got != "kept text\n" {
		t.Errorf("after the snapshot went, its sandbox reads %q", got)
	}
}

// testSnapshotLinks: a sandbox's root makes its /etc, and a volume's
// mount point, links to a directory of the host's; a sandbox started from
// a snapshot of it gets its own name and mount point written by the driver
// without a byte reaching that directory.
func testSnapshotLinks(t *testing.T, s Suite) {
	d := s.New(t)
	sn, ok := d.(driver.Snapshotter)
	caps := d.Capabilities()
	if !ok || !caps.Snapshots || !caps.RootUser || !caps.Images {
		// From an image, root inside owns /etc, as it does not the host
		// template's.
		t.Skip("the driver cannot copy sandboxes, run root inside, or start from images here")
	}
	ctx := context.Background()
	host := t.TempDir()
	if err := os.Chmod(host, 0o777); err != nil {
		t.Fatal(err)
	}
	img := suiteImage(t, caps.SharedLayers)
	sp := spec(api.Limits{})
	sp.Root, sp.Template, sp.Image = true, "busybox", img
	a := create(t, d, sp)
	sh(t, a, "rm -rf /etc && ln -s "+host+" /etc && rm -rf /srv && ln -s "+host+" /srv")
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := sn.Snapshot(ctx, a.handle, dir); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	t.Cleanup(func() { sn.RemoveSnapshot(dir) })
	bs := spec(api.Limits{})
	bs.Root, bs.Template, bs.Image, bs.Snapshot = true, "busybox", img, dir
	bs.Cwd = "/" // the image's, /srv, is now a link leading nowhere inside
	b := create(t, d, bs)
	if got := strings.TrimSpace(sh(t, b, "cat /etc/hostname")); got != b.id {
		t.Errorf("the sandbox from the snapshot has /etc/hostname %q; want its own id", got)
	}
	if d.Capabilities().Volumes {
		vol := t.TempDir()
		vs := spec(api.Limits{})
		vs.Root, vs.Template, vs.Image, vs.Snapshot, vs.Cwd = true, "busybox", img, dir, "/"
		vs.Volumes = []driver.Volume{{Dir: vol, Path: "/srv/sub"}}
		if sb, err := d.Create(ctx, vs); err == nil {
			d.Destroy(ctx, sb)
		}
	}
	if ents, err := os.ReadDir(host); err != nil || len(ents) != 0 {
		t.Errorf("the host's directory the sandbox linked to holds %v, %v; want nothing", ents, err)
	}
}
