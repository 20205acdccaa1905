package cgroups

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// unlimitedV1 is what memory.limit_in_bytes reads without a limit: the
// largest page-aligned int64.
const unlimitedV1 = "9223372036854771712"

// TestV1Limits creates a group, reads every limit back from box and <id>,
// then raises, lowers and lifts them (the two write orders of memsw).
func TestV1Limits(t *testing.T) {
	m := newV1Manager(t)
	owner := Owner{UID: 4242, GID: 4343}
	g, err := m.Create(testID(), Limits{MemoryBytes: 64 << 20, Pids: 50, CPU: 0.5}, owner)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { removeGroup(t, g) })

	for _, f := range g.ownedFiles() {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if int(sys.Uid) != owner.UID || int(sys.Gid) != owner.GID {
			t.Errorf("%s is owned by %d:%d, want %d:%d", f, sys.Uid, sys.Gid, owner.UID, owner.GID)
		}
	}

	steps := []struct {
		name string
		l    Limits
		// box and <id>: memory (and memsw), pids.max, cfs quota
		boxMem, idMem, boxPids, idPids, boxQuota string
	}{
		{"created", Limits{MemoryBytes: 64 << 20, Pids: 50, CPU: 0.5}, "67108864", "201326592", "50", "178", "50000"},
		{"raised", Limits{MemoryBytes: 256 << 20, Pids: 500, CPU: 2}, "268435456", "402653184", "500", "628", "200000"},
		{"lowered", Limits{MemoryBytes: 48 << 20, Pids: 10, CPU: 0.25}, "50331648", "184549376", "10", "138", "25000"},
		{"lifted", Limits{}, unlimitedV1, unlimitedV1, "max", "max", "-1"},
		{"set again", Limits{MemoryBytes: 32 << 20}, "33554432", "167772160", "max", "max", "-1"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.name != "created" {
				if err := g.SetLimits(s.l); err != nil {
					t.Fatalf("SetLimits(%+v): %v", s.l, err)
				}
			}
			checks := []struct{ controller, file, want string }{
				{Memory, "box/memory.limit_in_bytes", s.boxMem},
				{Memory, "box/memory.memsw.limit_in_bytes", s.boxMem},
				{Memory, "memory.limit_in_bytes", s.idMem},
				{Memory, "memory.memsw.limit_in_bytes", s.idMem},
				{Pids, "box/pids.max", s.boxPids},
				{Pids, "pids.max", s.idPids},
				{CPU, "box/cpu.cfs_period_us", "100000"},
				{CPU, "box/cpu.cfs_quota_us", s.boxQuota},
				{CPU, "cpu.cfs_quota_us", "-1"},
			}
			for _, c := range checks {
				h, ok := m.find(c.controller)
				if !ok {
					continue
				}
				path := filepath.Join(g.path(h), c.file)
				if !exists(path) {
					continue // memsw without swap accounting
				}
				if got := readBack(t, path); got != c.want {
					t.Errorf("%s = %s, want %s", path, got, c.want)
				}
			}
		})
	}
}

// TestV1PlaceAndProcs places a process the way the host places the agent,
// sees it in <id> of every hierarchy and in Procs, and sees its memory
// counted once it runs there.
func TestV1PlaceAndProcs(t *testing.T) {
	m := newV1Manager(t)
	g := create(t, m, Limits{MemoryBytes: 64 << 20, Pids: 50, CPU: 0.5})
	p := startHeld(t, "sleep", "1000")
	if err := g.Place(p.pid()); err != nil {
		t.Fatalf("Place: %v", err)
	}
	p.release(t)
	p.waitExec(t)
	want := "/" + m.parent + "/" + g.id
	for _, h := range m.hiers {
		for _, c := range h.controllers {
			if got := cgroupOf(t, p.pid(), c); got != want {
				t.Errorf("pid %d is in %s:%s, want %s", p.pid(), c, got, want)
			}
		}
	}
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pids, []int{p.pid()}) {
		t.Errorf("Procs() = %v, want [%d]", pids, p.pid())
	}
	if _, ok := m.find(Memory); ok {
		usage, err := g.MemoryUsage()
		if err != nil {
			t.Fatal(err)
		}
		if usage <= 0 {
			t.Errorf("MemoryUsage() = %d, want > 0 with sleep running", usage)
		}
	}
}

// TestV1JoinThread moves a single-threaded process (its tid is its pid) into
// the box with the Join a sandbox's agent gets, after a JSON round trip.
func TestV1JoinThread(t *testing.T) {
	m := newV1Manager(t)
	g := create(t, m, Limits{Pids: 20})
	b, err := json.Marshal(g.Join())
	if err != nil {
		t.Fatal(err)
	}
	var j nsinit.CgroupJoin
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Version != 1 || len(j.BoxTasks) != len(m.hiers) || j.BoxProcs != "" || j.AgentProcs != "" {
		t.Fatalf("Join() = %s", b)
	}
	p := start(t, "sleep", "1000")
	if err := nsinit.JoinThread(j.BoxTasks, p.pid()); err != nil {
		t.Fatalf("JoinThread: %v", err)
	}
	want := "/" + m.parent + "/" + g.id + "/box"
	for _, c := range v1Controllers {
		if _, ok := m.find(c); !ok {
			continue
		}
		if got := cgroupOf(t, p.pid(), c); got != want {
			t.Errorf("pid %d is in %s:%s, want %s", p.pid(), c, got, want)
		}
	}
	if pids, _ := g.Procs(); !slices.Contains(pids, p.pid()) {
		t.Errorf("Procs() = %v, want %d in it", pids, p.pid())
	}
}

// TestV1OOMKills runs a memory hog in a box of 32 MiB and sees the kernel
// kill it and count the kill.
func TestV1OOMKills(t *testing.T) {
	m := newV1Manager(t)
	if _, ok := m.find(Memory); !ok {
		t.Skip("no memory controller")
	}
	g := create(t, m, Limits{MemoryBytes: 32 << 20})
	if n, err := g.OOMKills(); err != nil || n != 0 {
		t.Fatalf("OOMKills() before = %d, %v; want 0", n, err)
	}
	p := startHeld(t, "sh", "-c", "head -c 200000000 /dev/zero | tail -n 1 >/dev/null")
	if err := nsinit.JoinThread(g.Join().BoxTasks, p.pid()); err != nil {
		t.Fatal(err)
	}
	p.release(t)
	err := p.wait(t, time.Minute)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("hog ended with %v, want a non-zero exit", err)
	}
	n, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("OOMKills() = 0 after the hog died (%v)", err)
	}
	t.Logf("hog: %v; OOMKills() = %d", exit, n)
}

// TestV1Kill kills a mix of processes, with the freezer and, on a copy of
// the Manager that does not see the freezer, without it.
func TestV1Kill(t *testing.T) {
	m := newV1Manager(t)
	noFreezer := *m
	noFreezer.hiers = slices.DeleteFunc(slices.Clone(m.hiers), func(h hierarchy) bool { return h.has(freezer) })
	tests := []struct {
		name string
		m    *Manager
	}{
		{"freezer", m},
		{"signals only", &noFreezer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := tt.m.find(freezer); tt.name == "freezer" && !ok {
				t.Skip("no v1 freezer on this host")
			}
			g := create(t, m, Limits{Pids: 100})
			procs := startMix(t, g)
			killed, err := tt.m.Open(g.id)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := killed.Kill(ctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if pids, err := g.Procs(); err != nil || len(pids) != 0 {
				t.Errorf("Procs() after Kill = %v, %v; want none", pids, err)
			}
			for _, p := range procs {
				p.wait(t, 5*time.Second)
			}
			if h, ok := m.find(freezer); ok {
				if s := readBack(t, g.path(h, "freezer.state")); s != "THAWED" {
					t.Errorf("freezer.state = %s after Kill, want THAWED", s)
				}
			}
		})
	}
}

// TestV1Remove sees Remove leave nothing, succeed again on a removed group,
// and fail with EBUSY, once ctx ends, while a process lives in the group.
func TestV1Remove(t *testing.T) {
	m := newV1Manager(t)
	g := create(t, m, Limits{})
	p := start(t, "sleep", "1000")
	if err := nsinit.JoinThread(g.Join().BoxTasks, p.pid()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.Remove(ctx); !errors.Is(err, unix.EBUSY) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Remove with a live process = %v, want EBUSY and DeadlineExceeded", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := g.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	t.Logf("Remove right after Kill took %v", time.Since(began))
	for _, dir := range g.dirs() {
		if exists(dir) {
			t.Errorf("%s is left after Remove", dir)
		}
	}
	if err := g.Remove(ctx); err != nil {
		t.Errorf("Remove of a removed group: %v", err)
	}
	if pids, err := g.Procs(); err != nil || len(pids) != 0 {
		t.Errorf("Procs() of a removed group = %v, %v", pids, err)
	}
}

// TestList finds the groups it made and skips names that are not ids.
func TestList(t *testing.T) {
	m := newV1Manager(t)
	a, b := create(t, m, Limits{}), create(t, m, Limits{})
	foreign := []string{"not-a-sandbox", "01HZY3K8Q9V2M4N6P8R0S2T4W6"}
	for _, name := range foreign {
		dir := filepath.Join(m.hiers[0].mount, m.parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rmdir(context.Background(), dir) })
	}
	got, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a.id, b.id}
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %q, want %q", got, want)
	}
}

// TestCreateFailures sees Create refuse bad ids and limits the kernel
// rejects half-way, leaving nothing behind, and refuse an id in use without
// touching its groups.
func TestCreateFailures(t *testing.T) {
	m := newV1Manager(t)
	tests := []struct {
		name string
		id   string
		l    Limits
		want error
	}{
		{"escaping id", "../../../../../../../../..", Limits{}, ErrInvalid},
		{"short id", "01hzy3k8", Limits{}, ErrInvalid},
		{"upper-case id", "01HZY3K8Q9V2M4N6P8R0S2T4W6", Limits{}, ErrInvalid},
		{"negative limit", testID(), Limits{Pids: -1}, ErrInvalid},
		{"pids the kernel refuses", testID(), Limits{MemoryBytes: 64 << 20, Pids: 1 << 40}, unix.EINVAL},
		{"cpu the kernel refuses", testID(), Limits{MemoryBytes: 64 << 20, Pids: 10, CPU: 1e9}, unix.EINVAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := m.Create(tt.id, tt.l, Owner{UID: -1, GID: -1})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Create = %v, %v; want %v", g, err, tt.want)
			}
			t.Logf("Create: %v", err)
			ids, err := m.List()
			if err != nil || len(ids) != 0 {
				t.Errorf("List() after a failed Create = %q, %v; want none", ids, err)
			}
			for _, h := range m.hiers {
				entries, _ := os.ReadDir(filepath.Join(h.mount, m.parent))
				for _, e := range entries {
					if e.IsDir() {
						t.Errorf("%s/%s/%s is left after a failed Create", h.mount, m.parent, e.Name())
					}
				}
			}
		})
	}

	t.Run("id in use", func(t *testing.T) {
		g := create(t, m, Limits{Pids: 7})
		if _, err := m.Create(g.id, Limits{}, Owner{UID: -1, GID: -1}); !errors.Is(err, ErrExists) {
			t.Fatalf("second Create = %v, want ErrExists", err)
		}
		for _, dir := range g.dirs() {
			if !exists(filepath.Join(dir, "box")) {
				t.Errorf("%s/box is gone after a refused Create", dir)
			}
		}
		if h, ok := m.find(Pids); ok {
			if got := readBack(t, g.path(h, "box", "pids.max")); got != strconv.Itoa(7) {
				t.Errorf("box pids.max = %s after a refused Create, want 7", got)
			}
		}
	})

	if _, err := m.Open("../x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(../x) = %v, want ErrInvalid", err)
	}
}
