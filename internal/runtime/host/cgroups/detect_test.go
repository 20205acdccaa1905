package cgroups

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const pureV2 = `22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
`

// hybrid is this kind of host: every controller in its own v1 hierarchy
// and a cgroup2 mount with none.
const hybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 30 0:32 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
37 30 0:34 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// coMounted is a systemd v1 host: cpu and cpuacct share a hierarchy, with
// optional fields before the separator; freezer is missing.
const coMounted = `25 18 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd
29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
31 25 0:28 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 master:3 - cgroup cgroup rw,pids
`

// bindMounted has a container's bind mount of a subtree before the real one.
const bindMounted = `50 40 0:31 /docker/abc /srv/memory\040cg rw - cgroup cgroup rw,memory
51 40 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`

func TestChoose(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		v2      []string // what a cgroup2 mount offers
		version int
		hiers   []hierarchy
		missing []string
	}{
		{
			name:    "pure v2",
			text:    pureV2,
			v2:      []string{Memory, Pids, CPU},
			version: 2,
			hiers:   []hierarchy{{mount: "/sys/fs/cgroup", controllers: []string{Memory, Pids, CPU}}},
		},
		{
			name:    "pure v2 without cpu",
			text:    pureV2,
			v2:      []string{Memory, Pids},
			version: 2,
			hiers:   []hierarchy{{mount: "/sys/fs/cgroup", controllers: []string{Memory, Pids}}},
			missing: []string{CPU},
		},
		{
			name:    "hybrid with an empty cgroup2",
			text:    hybrid,
			version: 1,
			hiers: []hierarchy{
				{mount: "/sys/fs/cgroup/memory", controllers: []string{Memory}},
				{mount: "/sys/fs/cgroup/pids", controllers: []string{Pids}},
				{mount: "/sys/fs/cgroup/cpu", controllers: []string{CPU}},
				{mount: "/sys/fs/cgroup/cpuacct", controllers: []string{cpuacct}},
				{mount: "/sys/fs/cgroup/freezer", controllers: []string{freezer}},
			},
		},
		{
			name:    "v1 with cpu,cpuacct",
			text:    coMounted,
			version: 1,
			hiers: []hierarchy{
				{mount: "/sys/fs/cgroup/memory", controllers: []string{Memory}},
				{mount: "/sys/fs/cgroup/pids", controllers: []string{Pids}},
				{mount: "/sys/fs/cgroup/cpu,cpuacct", controllers: []string{CPU, cpuacct}},
			},
		},
		{
			name:    "real mount preferred over a bind mount of a subtree",
			text:    bindMounted,
			version: 1,
			hiers:   []hierarchy{{mount: "/sys/fs/cgroup/memory", controllers: []string{Memory}}},
			missing: []string{Pids, CPU},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := parseMountInfo(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			v2 := func(string) ([]string, error) { return tt.v2, nil }
			version, hiers, err := choose(mounts, v2)
			if err != nil {
				t.Fatal(err)
			}
			if version != tt.version {
				t.Errorf("version = %d, want %d", version, tt.version)
			}
			if !reflect.DeepEqual(hiers, tt.hiers) {
				t.Errorf("hierarchies = %+v\nwant %+v", hiers, tt.hiers)
			}
			m := &Manager{version: version, parent: DefaultParent, hiers: hiers}
			if got := m.Missing(); !reflect.DeepEqual(got, tt.missing) {
				t.Errorf("Missing() = %q, want %q", got, tt.missing)
			}
		})
	}
}

func TestChooseNothingUsable(t *testing.T) {
	tests := []struct {
		name string
		text string
		v2   error
	}{
		{name: "no cgroup mounts", text: "28 1 259:2 / / rw - ext4 /dev/sda1 rw\n"},
		{name: "only name=systemd", text: "26 25 0:23 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"},
		{name: "unreadable cgroup2", text: pureV2, v2: errors.New("boom")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := parseMountInfo(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = choose(mounts, func(string) ([]string, error) { return nil, tt.v2 })
			if !errors.Is(err, ErrNoCgroups) {
				t.Errorf("choose = %v, want ErrNoCgroups", err)
			}
		})
	}
}

func TestParseMountInfo(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []mount
	}{
		{
			name: "escaped mount point and bind root",
			text: bindMounted,
			want: []mount{
				{point: "/srv/memory cg", root: "/docker/abc", ctrls: []string{Memory}},
				{point: "/sys/fs/cgroup/memory", root: "/", ctrls: []string{Memory}},
			},
		},
		{
			name: "cgroup2 and other file systems",
			text: pureV2,
			want: []mount{{point: "/sys/fs/cgroup", root: "/", v2: true}},
		},
		{
			name: "co-mounted controllers",
			text: "29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw shared:13 - cgroup cgroup rw,cpu,cpuacct,memory\n",
			want: []mount{{point: "/sys/fs/cgroup/cpu,cpuacct", root: "/", ctrls: []string{CPU, cpuacct, Memory}}},
		},
		{name: "empty", text: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountInfo(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseMountInfoMalformed(t *testing.T) {
	for _, text := range []string{"1 2 3\n", "31 30 0:28 / /x rw - cgroup\n"} {
		if _, err := parseMountInfo(strings.NewReader(text)); err == nil {
			t.Errorf("parseMountInfo(%q) succeeded", text)
		}
	}
}

func FuzzParseMountInfo(f *testing.F) {
	for _, s := range []string{pureV2, hybrid, coMounted, bindMounted} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		mounts, err := parseMountInfo(strings.NewReader(text))
		if err != nil {
			return
		}
		_, _, _ = choose(mounts, func(string) ([]string, error) { return nil, nil })
	})
}
