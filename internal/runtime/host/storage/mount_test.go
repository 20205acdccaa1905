package storage

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Mount
		bad  bool
	}{{
		name: "proc(5) example",
		line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
		want: Mount{ID: 36, Point: "/mnt2", Type: "ext3", Source: "/dev/root", Options: []string{"rw", "errors=continue"}},
	}, {
		name: "no optional fields",
		line: "238 27 7:0 / /tmp/x/m rw,relatime - xfs /dev/loop0 rw,inode64,logbufs=8,logbsize=32k,noquota",
		want: Mount{ID: 238, Point: "/tmp/x/m", Type: "xfs", Source: "/dev/loop0", Options: []string{"rw", "inode64", "logbufs=8", "logbsize=32k", "noquota"}},
	}, {
		name: "several optional fields",
		line: "99 1 0:50 / /data rw shared:7 master:2 propagate_from:2 - btrfs /dev/sdb rw,space_cache=v2,subvolid=5,subvol=/",
		want: Mount{ID: 99, Point: "/data", Type: "btrfs", Source: "/dev/sdb", Options: []string{"rw", "space_cache=v2", "subvolid=5", "subvol=/"}},
	}, {
		name: "escaped space, tab, newline and backslash",
		line: `40 1 0:1 / /a\040b\011c\012d\134e rw - tmpfs my\040tmpfs rw`,
		want: Mount{ID: 40, Point: "/a b\tc\nd\\e", Type: "tmpfs", Source: "my tmpfs", Options: []string{"rw"}},
	}, {
		name: "a backslash that is no escape stays",
		line: `41 1 0:1 / /a\9b rw - tmpfs tmpfs rw`,
		want: Mount{ID: 41, Point: `/a\9b`, Type: "tmpfs", Source: "tmpfs", Options: []string{"rw"}},
	}, {
		name: "no separator",
		line: "36 35 98:0 /mnt1 /mnt2 rw,noatime ext3 /dev/root rw",
		bad:  true,
	}, {
		name: "nothing after the separator",
		line: "36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root",
		bad:  true,
	}, {
		name: "id not a number",
		line: "x 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw",
		bad:  true,
	}, {
		name: "empty",
		bad:  true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountinfo(tt.line)
			if tt.bad {
				if err == nil {
					t.Fatalf("parseMountinfo(%q) = %+v, want an error", tt.line, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseMountinfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindMount(t *testing.T) {
	mi := strings.Join([]string{
		"22 27 0:21 / /proc rw,relatime - proc proc rw",
		"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard",
		"30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683656k",
	}, "\n")
	m, err := findMount(strings.NewReader(mi), 27)
	if err != nil {
		t.Fatal(err)
	}
	if m.Point != "/" || m.Type != "ext4" {
		t.Errorf("findMount 27 = %+v, want / ext4", m)
	}
	if _, err := findMount(strings.NewReader(mi), 99); err == nil {
		t.Error("findMount of an id not listed: no error")
	}
}

func TestMountOfHere(t *testing.T) {
	dir := t.TempDir()
	m, err := mountOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Point == "" || !strings.HasPrefix(dir, m.Point) {
		t.Errorf("mountOf(%s) = %+v: its mount point is not a prefix of it", dir, m)
	}
}

func TestProjectQuota(t *testing.T) {
	noKernel := errors.New("this kernel has no XFS quota support")
	tests := []struct {
		name     string
		mount    Mount
		noKernel error
		want     Quota
		hint     string // a part of want.Hint
	}{{
		name:  "xfs prjquota",
		mount: Mount{Point: "/d", Type: "xfs", Options: []string{"rw", "inode64", "prjquota"}},
		want:  Quota{Mechanism: QuotaProject, Enabled: true},
	}, {
		name:  "xfs pquota",
		mount: Mount{Point: "/d", Type: "xfs", Options: []string{"rw", "pquota"}},
		want:  Quota{Mechanism: QuotaProject, Enabled: true},
	}, {
		name:  "xfs counting only",
		mount: Mount{Point: "/d", Type: "xfs", Options: []string{"rw", "pqnoenforce"}},
		want:  Quota{Mechanism: QuotaProject},
		hint:  "not enforced",
	}, {
		name:  "xfs noquota",
		mount: Mount{Point: "/d", Type: "xfs", Options: []string{"rw", "noquota"}},
		want:  Quota{Mechanism: QuotaProject},
		hint:  "/d is not mounted with prjquota",
	}, {
		name:     "xfs on a kernel without xfs quota",
		mount:    Mount{Point: "/d", Type: "xfs", Options: []string{"rw", "noquota"}},
		noKernel: noKernel,
		want:     Quota{Mechanism: QuotaNone},
		hint:     "no XFS quota support",
	}, {
		name:  "ext4 prjquota",
		mount: Mount{Point: "/e", Type: "ext4", Options: []string{"rw", "prjquota"}},
		want:  Quota{Mechanism: QuotaProject, Enabled: true},
	}, {
		name:  "ext4 usrquota only",
		mount: Mount{Point: "/e", Type: "ext4", Options: []string{"rw", "usrquota"}},
		want:  Quota{Mechanism: QuotaProject},
		hint:  "tune2fs -O quota,project",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := projectQuota(tt.mount, tt.noKernel)
			if !strings.Contains(got.Hint, tt.hint) {
				t.Errorf("hint %q does not say %q", got.Hint, tt.hint)
			}
			if tt.want.Enabled && got.Hint != "" {
				t.Errorf("enabled, yet a hint: %q", got.Hint)
			}
			got.Hint = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("projectQuota (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDegraded(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{{
		name: "btrfs with qgroups",
		info: Info{Filesystem: "btrfs", Kind: Btrfs, Snapshot: SnapshotSubvolume, Quota: Quota{Mechanism: QuotaQgroup, Enabled: true}},
		want: "",
	}, {
		name: "btrfs without qgroups",
		info: Info{Filesystem: "btrfs", Kind: Btrfs, Snapshot: SnapshotSubvolume, Quota: Quota{Mechanism: QuotaQgroup, Hint: "qgroups are off"}},
		want: "btrfs: no disk quota (qgroups are off)",
	}, {
		name: "xfs with reflink, no quota",
		info: Info{Filesystem: "xfs", Kind: XFS, Snapshot: SnapshotReflink, Quota: Quota{Mechanism: QuotaNone, Hint: "no XFS quota"}},
		want: "xfs: no disk quota (no XFS quota)",
	}, {
		name: "overlay on ext4",
		info: Info{Filesystem: "ext4", Kind: Overlay, Snapshot: SnapshotCopy, Quota: Quota{Mechanism: QuotaProject, Hint: "not mounted with prjquota"}},
		want: "overlay on ext4: no instant snapshots, no disk quota (not mounted with prjquota)",
	}, {
		name: "overlay on ext4 with project quota",
		info: Info{Filesystem: "ext4", Kind: Overlay, Snapshot: SnapshotCopy, Quota: Quota{Mechanism: QuotaProject, Enabled: true}},
		want: "overlay on ext4: no instant snapshots",
	}, {
		name: "none on overlayfs",
		info: Info{Filesystem: "overlayfs", Kind: None, Snapshot: SnapshotCopy, Notes: []string{"reflink: no", "overlay: refused here"}},
		want: "no storage backend works on overlayfs: refused here",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := degraded(tt.info); got != tt.want {
				t.Errorf("degraded = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInfoString(t *testing.T) {
	tests := []struct {
		info Info
		want string
	}{{
		info: Info{Filesystem: "btrfs", Kind: Btrfs, Snapshot: SnapshotSubvolume, Quota: Quota{Mechanism: QuotaQgroup, Enabled: true}},
		want: "btrfs (snapshots: subvolume, quota: qgroup)",
	}, {
		info: Info{Filesystem: "ext4", Kind: Overlay, Snapshot: SnapshotCopy, Quota: Quota{Mechanism: QuotaProject}, Degraded: "overlay on ext4: no instant snapshots, no disk quota"},
		want: "overlay on ext4 (snapshots: copy, quota: project, off): overlay on ext4: no instant snapshots, no disk quota",
	}, {
		info: Info{Filesystem: "overlayfs", Kind: None, Snapshot: SnapshotCopy, Quota: Quota{Mechanism: QuotaNone}, Degraded: "no storage backend works on overlayfs: x"},
		want: "none on overlayfs (snapshots: copy, quota: none): no storage backend works on overlayfs: x",
	}}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestEscapeOverlay(t *testing.T) {
	if got, want := escapeOverlay(`/a:b,c\d`), `/a\:b\,c\\d`; got != want {
		t.Errorf("escapeOverlay = %q, want %q", got, want)
	}
}
