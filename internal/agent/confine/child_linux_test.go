package confine

// Apply cannot be undone, so every test that applies a Config runs it in a
// child: the test binary re-executes itself with -test.run=^TestHelper$ and
// envScenario naming a scenario. The child applies the Config, tries what it
// should and should not be able to do, and exits 0 after printing doneMarker
// only if every check held; the parent asserts that. The test package must
// not import net or os/user: either would link cgo on a machine with a C
// compiler, and Apply refuses a cgo binary.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	envScenario = "HUTCH_CONFINE_TEST_SCENARIO"
	envArgs     = "HUTCH_CONFINE_TEST_ARGS"
	doneMarker  = "confine-child: all checks held"
	reportLine  = "confine-child-report: "
)

// childArgs is what the parent hands a scenario.
type childArgs struct {
	Config   Config
	Dir      string // scratch directory the parent made
	Ports    []int  // TCP listeners the parent holds on 127.0.0.1
	Abstract string // abstract unix socket the parent listens on, without '@'
	ABI      int    // the kernel's Landlock ABI
}

// scenarios maps envScenario values to child bodies.
var scenarios = map[string]func(a *childArgs) error{}

// TestHelper is the body of the child processes the other tests start; in
// a normal run it has nothing to do.
func TestHelper(t *testing.T) {
	name := os.Getenv(envScenario)
	if name == "" {
		t.Skip("runs only as a child process started by the other tests")
	}
	fn, ok := scenarios[name]
	if !ok {
		fmt.Printf("unknown scenario %q\n", name)
		os.Exit(2)
	}
	var a childArgs
	if err := json.Unmarshal([]byte(os.Getenv(envArgs)), &a); err != nil {
		fmt.Printf("decoding args: %v\n", err)
		os.Exit(2)
	}
	if err := fn(&a); err != nil {
		fmt.Printf("FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(doneMarker)
	os.Exit(0)
}

// runChild runs scenario in a child and fails t unless every check in it
// held. It returns the Report the child printed, if it printed one.
func runChild(t *testing.T, scenario string, a childArgs) Report {
	t.Helper()
	if _, ok := scenarios[scenario]; !ok {
		t.Fatalf("no scenario %q", scenario)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envScenario+"="+scenario, envArgs+"="+string(b))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), doneMarker) {
		t.Fatalf("child %q: %v\n%s", scenario, err, out)
	}
	var rep Report
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, reportLine); ok {
			if err := json.Unmarshal([]byte(rest), &rep); err != nil {
				t.Fatalf("child %q printed a bad report %q: %v", scenario, rest, err)
			}
		}
	}
	return rep
}

// applyAndPrint applies c in the child and prints the report for the parent.
func applyAndPrint(c *Config) error {
	rep, err := Apply(c)
	if err != nil {
		return fmt.Errorf("Apply: %w", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Println(reportLine + string(b))
	return nil
}

// checks collects the outcome of many checks in a child, so one run reports
// every failure.
type checks struct{ errs []error }

func (c *checks) ok(what string, err error) {
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w, want success", what, err))
	}
}

func (c *checks) errno(what string, err error, want unix.Errno) {
	if !errors.Is(err, want) {
		c.errs = append(c.errs, fmt.Errorf("%s: got %v, want %v", what, err, want))
	}
}

func (c *checks) that(what string, cond bool) {
	if !cond {
		c.errs = append(c.errs, errors.New(what))
	}
}

func (c *checks) err() error { return errors.Join(c.errs...) }

// needAllThreads skips t when the test binary links cgo, as it does under
// -race: Apply then refuses anything that must reach every thread.
func needAllThreads(t *testing.T) {
	t.Helper()
	if err := checkAllThreads(); err != nil {
		t.Skipf("Apply cannot act on every thread in this test binary: %v", err)
	}
}

// needLandlock skips t unless the kernel's Landlock ABI is at least abi and
// Apply can reach every thread.
func needLandlock(t *testing.T, abi int) int {
	t.Helper()
	needAllThreads(t)
	have := landlockABI()
	if have < abi {
		t.Skipf("kernel Landlock ABI is %d, this test needs %d", have, abi)
	}
	return have
}

// needSeccomp skips t unless the filter can be installed and Apply can
// reach every thread (the tests set no_new_privs with it).
func needSeccomp(t *testing.T) {
	t.Helper()
	needAllThreads(t)
	if err := seccompUsable(); err != nil {
		t.Skipf("kernel cannot install the seccomp filter: %v", err)
	}
}

// procStatus returns the fields of a /proc/…/status text.
func procStatus(text string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// listenTCP opens a listener on 127.0.0.1 in the parent, without package
// net (see the top of this file).
func listenTCP(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4).Port
}

func connectTCP(port int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port})
}

// listenAbstract listens on a fresh abstract unix socket and returns its
// name without the leading '@'.
func listenAbstract(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("hutch-confine-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	return name
}

func connectAbstract(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name})
}

// systemRO are the trees a child needs to run dynamically linked programs
// such as /bin/true and /bin/sh.
var systemRO = []string{"/bin", "/sbin", "/usr", "/lib", "/lib64", "/etc"}

func writeFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

func hasMissing(r Report, name string) bool { return slices.Contains(r.Missing, name) }
