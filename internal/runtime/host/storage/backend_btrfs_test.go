package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/testutil"
)

// TestBtrfsQuota: with qgroups on, SetLimit caps a subvolume (a write
// past it fails with EDQUOT), Usage reads the qgroup, 0 lifts the cap,
// and a removed subvolume's qgroup goes.
func TestBtrfsQuota(t *testing.T) {
	t.Parallel()
	lfs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "btrfs"})
	run(t, "btrfs", "quota", "enable", lfs.Dir)
	info, err := Probe(lfs.Dir, lfs.Dir)
	if err != nil {
		t.Fatal(err)
	}
	b := Open(info)
	ctx := context.Background()
	layer := filepath.Join(lfs.Dir, "layer")
	if err := b.Make(layer); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLimit(layer, 8<<20); err != nil {
		t.Fatalf("SetLimit: %v", err)
	}
	id := qgroupOf(t, layer)
	if got := qgroupShow(t, lfs.Dir)[id]; got.maxRfer != "8388608" {
		t.Errorf("btrfs qgroup show: %s has max_rfer %q, want 8388608", id, got.maxRfer)
	}

	n, err := fill(t, filepath.Join(layer, "big"), 16<<20)
	t.Logf("under an 8 MiB limit: wrote %d bytes, then %v", n, err)
	if !errors.Is(err, unix.EDQUOT) {
		t.Errorf("writing 16 MiB under an 8 MiB limit: %d bytes, %v; want EDQUOT", n, err)
	}
	if n > 8<<20 {
		t.Errorf("wrote %d bytes under an 8 MiB limit", n)
	}
	syncfs(t, layer)
	u, err := b.Usage(ctx, layer)
	if err != nil {
		t.Fatal(err)
	}
	walked, err := walkUsage(ctx, layer)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Usage = %+v; a walk says %d; btrfs qgroup show says referenced %s", u, walked.Bytes, qgroupShow(t, lfs.Dir)[id].rfer)
	if u.Method != UsageQgroup || u.Limit != 8<<20 || u.Bytes < n || u.Bytes > n+1<<20 {
		t.Errorf("Usage after writing %d bytes = %+v; want the qgroup's, about as much, limit 8 MiB", n, u)
	}
	if got := qgroupShow(t, lfs.Dir)[id].rfer; got != strconv.FormatInt(u.Bytes, 10) {
		t.Errorf("Usage says %d bytes, btrfs qgroup show %s", u.Bytes, got)
	}

	// 0 lifts the limit.
	if err := b.SetLimit(layer, 0); err != nil {
		t.Fatalf("SetLimit(0): %v", err)
	}
	if n, err := fill(t, filepath.Join(layer, "bigger"), 16<<20); err != nil {
		t.Errorf("writing 16 MiB with no limit: %d bytes, %v", n, err)
	}
	syncfs(t, layer)
	if u, err := b.Usage(ctx, layer); err != nil || u.Limit != 0 || u.Bytes < 16<<20 {
		t.Errorf("Usage with no limit = %+v, %v", u, err)
	}

	// A snapshot of a limited subvolume: the kernel gives it the limit.
	if err := b.SetLimit(layer, 64<<20); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(lfs.Dir, "snap")
	if _, err := b.Copy(ctx, layer, snap); err != nil {
		t.Fatal(err)
	}
	su, err := b.Usage(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a snapshot of a subvolume limited to 64 MiB: Usage %+v", su)
	if su.Method != UsageQgroup || su.Limit != 64<<20 {
		t.Errorf("the snapshot's Usage = %+v; want its qgroup with its source's 64 MiB limit", su)
	}

	// Remove deletes non-empty subvolumes; their qgroups go once the
	// cleaner has freed them.
	for _, dir := range []string{layer, snap} {
		if err := b.Remove(dir); err != nil {
			t.Fatalf("Remove(%s): %v", dir, err)
		}
	}
	noSubvolumesLeft(t, lfs.Dir)
}

// TestBtrfsSetLimitPlainDir: qgroups limit subvolumes only.
func TestBtrfsSetLimitPlainDir(t *testing.T) {
	t.Parallel()
	lfs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "btrfs"})
	run(t, "btrfs", "quota", "enable", lfs.Dir)
	info, err := Probe(lfs.Dir, lfs.Dir)
	if err != nil {
		t.Fatal(err)
	}
	b := Open(info)
	dir := filepath.Join(lfs.Dir, "plain")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	err = b.SetLimit(dir, 8<<20)
	if !strings.Contains(err.Error(), "not a btrfs subvolume") {
		t.Errorf("SetLimit on a plain directory: %v", err)
	}
	if u, err := b.Usage(context.Background(), dir); err != nil || u.Method != UsageWalk {
		t.Errorf("Usage of a plain directory: %+v, %v; want a walk", u, err)
	}
}

// qgroupOf is the level-0 qgroup of the subvolume dir, as "0/<id>".
func qgroupOf(t *testing.T, dir string) string {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	id, err := subvolumeID(fd)
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, "btrfs", "subvolume", "show", dir)
	shown := ""
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "Subvolume" && f[1] == "ID:" {
			shown = f[2]
		}
	}
	if shown != strconv.FormatUint(id, 10) {
		t.Errorf("subvolumeID(%s) = %d; btrfs subvolume show says %q", dir, id, shown)
	}
	return "0/" + strconv.FormatUint(id, 10)
}

type qgroupRow struct{ rfer, maxRfer string }

// qgroupShow is `btrfs qgroup show -r --raw`, by qgroup id.
func qgroupShow(t *testing.T, mnt string) map[string]qgroupRow {
	t.Helper()
	rows := map[string]qgroupRow{}
	for line := range strings.Lines(run(t, "btrfs", "qgroup", "show", "-r", "--raw", mnt)) {
		if f := strings.Fields(line); len(f) >= 4 && strings.HasPrefix(f[0], "0/") {
			rows[f[0]] = qgroupRow{rfer: f[1], maxRfer: f[3]}
		}
	}
	return rows
}

func syncfs(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		t.Fatal(err)
	}
}
