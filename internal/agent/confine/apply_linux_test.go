package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func init() {
	scenarios["rlimits"] = childRlimits
	scenarios["threads"] = childThreads
	scenarios["invalid"] = childInvalid
	scenarios["cgo"] = childCgo
}

func TestRlimitTableMatchesNames(t *testing.T) {
	var keys []string
	for k := range rlimitResources {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	names := slices.Clone(rlimitNames)
	slices.Sort(names)
	if diff := cmp.Diff(names, keys); diff != "" {
		t.Errorf("rlimitResources keys differ from rlimitNames (-names +keys):\n%s", diff)
	}
}

var testRlimits = []Rlimit{
	{Resource: "nofile", Cur: 64, Max: 128},
	{Resource: "nproc", Cur: 4000, Max: 5000},
	{Resource: "fsize", Cur: 1 << 30, Max: 1 << 31},
	{Resource: "core", Cur: 0, Max: 0},
	{Resource: "cpu", Cur: 3600, Max: 7200},
	{Resource: "stack", Cur: 8 << 20, Max: 16 << 20},
	{Resource: "memlock", Cur: 64 << 10, Max: 64 << 10},
	{Resource: "as", Cur: 1 << 40, Max: 1 << 41},
}

// TestRlimits: the child sees every limit in getrlimit, and a program it
// starts inherits them (Go would otherwise restore its saved NOFILE soft
// limit in children).
func TestRlimits(t *testing.T) {
	runChild(t, "rlimits", childArgs{Config: Config{Rlimits: testRlimits}})
}

func childRlimits(a *childArgs) error {
	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}
	var c checks
	for _, r := range a.Config.Rlimits {
		var got unix.Rlimit
		c.ok("getrlimit "+r.Resource, unix.Getrlimit(rlimitResources[r.Resource], &got))
		c.that(fmt.Sprintf("getrlimit(%s) = %d/%d, want %d/%d", r.Resource, got.Cur, got.Max, r.Cur, r.Max),
			got.Cur == r.Cur && got.Max == r.Max)
	}
	out, err := exec.Command("/bin/sh", "-c", "ulimit -Sn; ulimit -Hn").Output()
	c.ok("sh ulimit", err)
	c.that(fmt.Sprintf("grandchild nofile soft/hard = %q, want 64 and 128", out), string(out) == "64\n128\n")
	return c.err()
}

// TestAllThreadsConfined: threads that existed before Apply and threads
// started after it all carry no_new_privs, the filter and Landlock.
func TestAllThreadsConfined(t *testing.T) {
	needLandlock(t, 1)
	needSeccomp(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "secret.txt"), "secret", 0o644)
	cfg := Config{NoNewPrivs: true, Seccomp: true, Landlock: &Landlock{ReadOnly: []string{"/proc"}}}
	runChild(t, "threads", childArgs{Config: cfg, Dir: dir})
}

// threadCheck reports on the calling OS thread.
func threadCheck(dir string) (tid int, err error) {
	var c checks
	st, err := os.ReadFile("/proc/thread-self/status")
	c.ok("read /proc/thread-self/status", err)
	s := procStatus(string(st))
	c.that(fmt.Sprintf("NoNewPrivs = %q, want 1", s["NoNewPrivs"]), s["NoNewPrivs"] == "1")
	c.that(fmt.Sprintf("Seccomp = %q, want 2", s["Seccomp"]), s["Seccomp"] == "2")
	_, err = os.ReadFile(filepath.Join(dir, "secret.txt"))
	c.errno("landlock: read outside", err, unix.EACCES)
	c.errno("seccomp: unshare", unix.Unshare(unix.CLONE_NEWUTS), unix.EPERM)
	tid = unix.Gettid()
	if err := c.err(); err != nil {
		return tid, fmt.Errorf("thread %d: %w", tid, err)
	}
	return tid, nil
}

func childThreads(a *childArgs) error {
	const n = 4
	// Threads made before Apply, each held by a locked goroutine.
	var before []*lockedWorker
	for range n {
		before = append(before, startLockedWorker())
	}
	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		tids = map[int]bool{}
		errs checks
	)
	record := func(tid int, err error) {
		mu.Lock()
		defer mu.Unlock()
		tids[tid] = true
		errs.ok("thread check", err)
	}
	for _, w := range before {
		w.run(func() { record(threadCheck(a.Dir)) })
	}
	// Threads made after Apply: while the earlier workers keep their threads
	// locked, each new locked worker needs a fresh one.
	for range n {
		startLockedWorker().run(func() { record(threadCheck(a.Dir)) })
	}
	errs.that(fmt.Sprintf("checked %d distinct threads, want %d", len(tids), 2*n), len(tids) == 2*n)
	// Every thread the process has, as the kernel lists them.
	ents, err := os.ReadDir("/proc/self/task")
	errs.ok("list /proc/self/task", err)
	for _, e := range ents {
		st, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		errs.ok("read task status", err)
		s := procStatus(string(st))
		errs.that(fmt.Sprintf("task %s: NoNewPrivs %q Seccomp %q, want 1 and 2", e.Name(), s["NoNewPrivs"], s["Seccomp"]),
			s["NoNewPrivs"] == "1" && s["Seccomp"] == "2")
	}
	return errs.err()
}

// TestApplyRefusesBadConfigUntouched: an invalid config fails before any
// step, so the process is left as it was.
func TestApplyRefusesBadConfigUntouched(t *testing.T) {
	cfg := Config{NoNewPrivs: true, Seccomp: true, Rlimits: []Rlimit{
		{Resource: "nofile", Cur: 32, Max: 32},
		{Resource: "bogus", Cur: 1, Max: 1},
	}}
	runChild(t, "invalid", childArgs{Config: cfg})
}

func childInvalid(a *childArgs) error {
	var c checks
	var before, after unix.Rlimit
	c.ok("getrlimit before", unix.Getrlimit(unix.RLIMIT_NOFILE, &before))
	_, err := Apply(&a.Config)
	c.that(fmt.Sprintf("Apply error = %v, want one naming the bogus rlimit", err),
		err != nil && strings.Contains(err.Error(), `"bogus"`))
	c.ok("getrlimit after", unix.Getrlimit(unix.RLIMIT_NOFILE, &after))
	c.that(fmt.Sprintf("nofile changed from %+v to %+v", before, after), before == after)
	st, err := os.ReadFile("/proc/self/status")
	c.ok("read status", err)
	s := procStatus(string(st))
	c.that(fmt.Sprintf("NoNewPrivs = %q Seccomp = %q, want 0 and 0", s["NoNewPrivs"], s["Seccomp"]),
		s["NoNewPrivs"] == "0" && s["Seccomp"] == "0")
	return c.err()
}

// TestApplyRefusesCgoBinary runs only where the test binary links cgo (as
// under -race): Apply must refuse before changing anything rather than
// confine some threads and not others.
func TestApplyRefusesCgoBinary(t *testing.T) {
	if checkAllThreads() == nil {
		t.Skip("the test binary does not link cgo; run with -race (or cgo) to exercise this")
	}
	runChild(t, "cgo", childArgs{Config: Config{NoNewPrivs: true, Rlimits: []Rlimit{{Resource: "nofile", Cur: 32, Max: 32}}}})
}

func childCgo(a *childArgs) error {
	var c checks
	var before, after unix.Rlimit
	c.ok("getrlimit before", unix.Getrlimit(unix.RLIMIT_NOFILE, &before))
	_, err := Apply(&a.Config)
	c.that(fmt.Sprintf("Apply error = %v, want errCgo", err), errors.Is(err, errCgo))
	c.ok("getrlimit after", unix.Getrlimit(unix.RLIMIT_NOFILE, &after))
	c.that(fmt.Sprintf("nofile changed from %+v to %+v", before, after), before == after)
	return c.err()
}

// TestProbe compares Probe with what the kernel says directly. Probe
// confines nothing, so it runs in the test process.
func TestProbe(t *testing.T) {
	rep := Probe()
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	wantABI := int(abi)
	if errno != 0 {
		wantABI = 0
	}
	if rep.LandlockABI != wantABI {
		t.Errorf("Probe().LandlockABI = %d, want %d", rep.LandlockABI, wantABI)
	}
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	if err == nil && mode == 0 && haveSeccompTable && !rep.Seccomp {
		t.Errorf("Probe().Seccomp = false on a kernel with seccomp and a table for this arch")
	}
	if rep.Seccomp == hasMissing(rep, MissingSeccomp) {
		t.Errorf("Probe() = %+v: Seccomp and Missing disagree", rep)
	}
	for _, c := range []struct {
		name string
		want bool
	}{
		{MissingLandlock, wantABI == 0},
		{MissingLandlockTCP, wantABI >= 1 && wantABI < 4},
		{MissingLandlockTSync, wantABI >= 1 && wantABI < 8},
		{MissingLandlockScope, wantABI >= 1 && (wantABI < 6 || landlockErrata()&erratumScopedSignal == 0)},
	} {
		if got := hasMissing(rep, c.name); got != c.want {
			t.Errorf("Probe().Missing = %v: %q listed %v, want %v (ABI %d)", rep.Missing, c.name, got, c.want, wantABI)
		}
	}
	// Probe left the process as it was.
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if s := procStatus(string(st)); s["Seccomp"] != "0" || s["NoNewPrivs"] != "0" {
		t.Errorf("after Probe: Seccomp %q NoNewPrivs %q, want 0 and 0", s["Seccomp"], s["NoNewPrivs"])
	}
}
