package layer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// envRootless marks the run TestRootless starts.
const envRootless = "HUTCH_LAYER_ROOTLESS"

// TestRootless runs this package's tests again as an unprivileged user
// (nobody), as a rootless hutch unpacks: the attacks must fail the same
// way without root's powers, and read-only directories must not stop a
// layer. What needs root skips there, saying why.
func TestRootless(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("runs from a root run, which starts the unprivileged one")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "hutch-layer-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, "layer.test")
	if err := os.WriteFile(test, self, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(test, "-test.count=1", "-test.v", "-test.skip=^TestRootless$")
	cmd.Dir = tmp
	cmd.Env = []string{envRootless + "=1", "TMPDIR=" + tmp, "PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as uid %d: %v\n%s", nobody, err, out)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
}
