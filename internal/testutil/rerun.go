package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the unprivileged user RerunAsNobody runs tests as.
const Nobody = 65534

// RerunAsNobody runs this test binary again as Nobody with args, from a
// copy in dir (which the caller made and removes; it becomes 0755, so the
// copy is reachable), with dir/tmp, owned by Nobody, as its working and
// temporary directory, and env added to a minimal environment. It fails t
// with the output when the run fails, and returns the output.
func RerunAsNobody(t *testing.T, dir string, args []string, env ...string) []byte {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(dir, filepath.Base(os.Args[0]))
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
	if err := os.Chown(tmp, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(test, args...)
	cmd.Dir = tmp
	cmd.Env = append([]string{"TMPDIR=" + tmp, "PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as uid %d: %v\n%s", Nobody, err, out)
	}
	return out
}
