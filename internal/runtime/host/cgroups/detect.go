package cgroups

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/mountinfo"
)

// mount is one cgroup file system from /proc/self/mountinfo.
type mount struct {
	point string   // where it is mounted
	root  string   // which group of the hierarchy is its root ("/" unless a namespace or bind mount)
	v2    bool     // cgroup2 rather than cgroup
	ctrls []string // v1: the controllers its super options name
}

// v1Controllers are the v1 controllers hutch uses, in the order their
// hierarchies are listed.
var v1Controllers = []string{Memory, Pids, CPU, cpuacct, freezer}

// New finds the cgroup file systems of this host in /proc/self/mountinfo and
// returns a Manager for groups under parent. It picks the version that holds
// more of the memory, pids and cpu controllers (v2 on a tie), and fails with
// ErrNoCgroups when neither can hold a group. It changes nothing on the host.
func New(parent string) (*Manager, error) {
	if err := checkParent(parent); err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroups, err)
	}
	defer f.Close()
	mounts, err := parseMountInfo(f)
	if err != nil {
		return nil, err
	}
	version, hiers, err := choose(mounts, readV2Controllers)
	if err != nil {
		return nil, err
	}
	return &Manager{version: version, parent: parent, hiers: hiers}, nil
}

// newV2 returns a v2 Manager on the cgroup2 file system mounted at mnt,
// whatever else the host has. New uses choose instead; tests use this to
// drive the v2 code on a hybrid host's cgroup2 mount.
func newV2(parent, mnt string) (*Manager, error) {
	if err := checkParent(parent); err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		return nil, fmt.Errorf("cgroups: statfs %s: %w", mnt, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("%w: %s is not a cgroup2 file system", ErrNoCgroups, mnt)
	}
	ctrls, err := readV2Controllers(mnt)
	if err != nil {
		return nil, err
	}
	return &Manager{version: 2, parent: parent, hiers: []hierarchy{{mount: mnt, controllers: ctrls}}}, nil
}

// readV2Controllers returns which of memory, pids and cpu the cgroup2 root
// at mnt offers its children.
func readV2Controllers(mnt string) ([]string, error) {
	s, err := readFile(filepath.Join(mnt, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	offered := strings.Fields(s)
	var out []string
	for _, c := range limited {
		if slices.Contains(offered, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// choose decides between v1 and v2. v2Ctrls reads which controllers a
// cgroup2 mount offers (a parameter so tests need no real mount).
func choose(mounts []mount, v2Ctrls func(mnt string) ([]string, error)) (int, []hierarchy, error) {
	var v1 []hierarchy
	for _, c := range v1Controllers {
		m, ok := pick(mounts, func(m mount) bool { return !m.v2 && slices.Contains(m.ctrls, c) })
		if !ok {
			continue
		}
		i := slices.IndexFunc(v1, func(h hierarchy) bool { return h.mount == m.point })
		if i < 0 {
			v1 = append(v1, hierarchy{mount: m.point})
			i = len(v1) - 1
		}
		v1[i].controllers = append(v1[i].controllers, c)
	}
	v1Count := 0
	for _, c := range limited {
		if slices.ContainsFunc(v1, func(h hierarchy) bool { return h.has(c) }) {
			v1Count++
		}
	}

	var v2Err error
	if m, ok := pick(mounts, func(m mount) bool { return m.v2 }); ok {
		ctrls, err := v2Ctrls(m.point)
		if err == nil && len(ctrls) >= v1Count {
			return 2, []hierarchy{{mount: m.point, controllers: ctrls}}, nil
		}
		v2Err = err
	}
	if len(v1) > 0 {
		return 1, v1, nil
	}
	if v2Err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrNoCgroups, v2Err)
	}
	return 0, nil, ErrNoCgroups
}

// pick returns the first mount that matches, preferring one that shows the
// whole hierarchy (root "/") over a bind mount of a subtree.
func pick(mounts []mount, match func(mount) bool) (mount, bool) {
	var found mount
	ok := false
	for _, m := range mounts {
		if !match(m) {
			continue
		}
		if !ok || found.root != "/" && m.root == "/" {
			found, ok = m, true
		}
	}
	return found, ok
}

// parseMountInfo reads the cgroup and cgroup2 mounts from a
// /proc/<pid>/mountinfo text (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
func parseMountInfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+4 {
			if len(fields) == 0 {
				continue
			}
			return nil, fmt.Errorf("cgroups: malformed mountinfo line %q", sc.Text())
		}
		fstype, super := fields[sep+1], fields[sep+3]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		m := mount{
			point: mountinfo.Unescape(fields[4]),
			root:  mountinfo.Unescape(fields[3]),
			v2:    fstype == "cgroup2",
		}
		if !m.v2 {
			for _, opt := range strings.Split(super, ",") {
				if slices.Contains(v1Controllers, opt) {
					m.ctrls = append(m.ctrls, opt)
				}
			}
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroups: read mountinfo: %w", err)
	}
	return out, nil
}
