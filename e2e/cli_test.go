package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/testutil"
)

// cli runs the hutch CLI against s with stdin and returns stdout, stderr
// and the exit code.
func (s *server) cli(stdin string, args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "hutch"), args...)
	cmd.Env = append(os.Environ(), "HUTCH_URL="+s.url, "HUTCH_API_KEY="+s.key)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestCLI drives the README's CLI quick start against a real server.
func TestCLI(t *testing.T) {
	s := startServer(t, "")
	out, errOut, code := s.cli("", "sandbox", "create", "--env", "GREETING=hi", "--label", "team=cli")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)

	if out, _, code := s.cli("", "exec", id, "--", "sh", "-c", "echo $GREETING; exit 7"); code != 7 || out != "hi\n" {
		t.Fatalf("exec = %q, exit %d; want hi and 7", out, code)
	}
	if _, errOut, code := s.cli("", "exec", id, "--", "no-such-program"); code != 127 || !strings.Contains(errOut, "no-such-program") {
		t.Fatalf("missing program: exit %d, stderr %q", code, errOut)
	}
	if out, _, code := s.cli("piped input", "exec", id, "--", "cat"); code != 0 || out != "piped input" {
		t.Fatalf("stdin: %q %d", out, code)
	}

	// cp both ways, a file through stdin/stdout and a directory as tar.
	if _, errOut, code := s.cli("hello via cp\n", "cp", "-", id+":hello.txt"); code != 0 {
		t.Fatalf("cp in: %s", errOut)
	}
	if out, _, _ := s.cli("", "cp", id+":hello.txt", "-"); out != "hello via cp\n" {
		t.Fatalf("cp out = %q", out)
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "a.txt"), []byte("A"), 0o644)
	if _, errOut, code := s.cli("", "cp", "-r", src, id+":tree"); code != 0 {
		t.Fatalf("cp -r in: %s", errOut)
	}
	dst := filepath.Join(t.TempDir(), "back")
	if _, errOut, code := s.cli("", "cp", "-r", id+":tree", dst); code != 0 {
		t.Fatalf("cp -r out: %s", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "a.txt")); err != nil || string(b) != "A" {
		t.Fatalf("round-tripped tree: %q %v", b, err)
	}

	if out, _, _ := s.cli("", "sandbox", "ls", "--label", "team=cli"); !strings.Contains(out, id) {
		t.Fatalf("ls = %q", out)
	}
	if out, _, _ := s.cli("", "sandbox", "ls", "--json"); !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("ls --json = %q", out)
	}
	if _, errOut, code := s.cli("", "sandbox", "rm", id); code != 0 {
		t.Fatalf("rm: %s", errOut)
	}

	// run: create, exec, destroy; the exit code passes through.
	if out, _, code := s.cli("", "run", "--", "sh", "-c", "echo ran; exit 3"); code != 3 || out != "ran\n" {
		t.Fatalf("run = %q %d", out, code)
	}
	if out, _, _ := s.cli("", "sandbox", "ls"); strings.Count(out, "\n") != 1 {
		t.Fatalf("run left a sandbox behind:\n%s", out)
	}

	// Keys and errors.
	out, _, code = s.cli("", "key", "create", "--name", "ci")
	if code != 0 || !strings.HasPrefix(out, "hk_") {
		t.Fatalf("key create = %q %d", out, code)
	}
	if _, errOut, code := s.cli("", "sandbox", "get", "01jzzzzzzzzzzzzzzzzzzzzzzz"); code != 1 || !strings.Contains(errOut, "sandbox_not_found") {
		t.Fatalf("get unknown: %d %q", code, errOut)
	}
	if _, _, code := s.cli("", "exec", id); code != 2 {
		t.Fatalf("exec without a command exited %d, want 2", code)
	}
}

// TestCLITemplates: hutch template import takes an OCI layout directory
// (tarred on the way) or an archive, ls lists, a sandbox starts from it,
// and rm deletes it.
func TestCLITemplates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's id-mapped layers; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace")
	img := testutil.BusyboxImage(t, testutil.BusyboxOpts())
	if out, errOut, code := s.cli("", "template", "import", "bb", testutil.WriteLayout(t, img)); code != 0 || out != "bb\n" {
		t.Fatalf("import a layout directory: %q %q %d", out, errOut, code)
	}
	if _, errOut, code := s.cli("", "template", "import", "bb-save", testutil.WriteDockerSave(t, img, "bb:1")); code != 0 {
		t.Fatalf("import a docker save tar: %q %d", errOut, code)
	}
	out, _, code := s.cli("", "template", "ls")
	if code != 0 || !strings.Contains(out, "bb-save") || !strings.Contains(out, "upload") {
		t.Fatalf("ls: %q %d", out, code)
	}
	out, errOut, code := s.cli("", "sandbox", "create", "--template", "bb")
	if code != 0 {
		t.Fatalf("create from the template: %q %d", errOut, code)
	}
	id := strings.TrimSpace(out)
	if out, _, code := s.cli("", "exec", id, "--", "sh", "-c", "echo $GREETING; pwd"); code != 0 || out != "hello\n/srv\n" {
		t.Errorf("exec in it: %q %d", out, code)
	}
	if _, errOut, code := s.cli("", "template", "rm", "bb"); code == 0 || !strings.Contains(errOut, "template_in_use") {
		t.Errorf("rm a template in use: %q %d", errOut, code)
	}
	if _, _, code := s.cli("", "sandbox", "rm", id); code != 0 {
		t.Fatal("sandbox rm")
	}
	if out, errOut, code := s.cli("", "template", "rm", "bb", "bb-save"); code != 0 || out != "bb\nbb-save\n" {
		t.Errorf("rm: %q %q %d", out, errOut, code)
	}
}

// TestCLIExtend: hutch sandbox extend gives a running sandbox a new
// lifetime from now, a stopped one from its next start.
func TestCLIExtend(t *testing.T) {
	s := startServer(t, "")
	out, errOut, code := s.cli("", "sandbox", "create", "--timeout", "60")
	if code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	id := strings.TrimSpace(out)
	if out, errOut, code := s.cli("", "sandbox", "extend", id, "2h"); code != 0 || !strings.Contains(out, "expires at") {
		t.Fatalf("extend: %q %q %d", out, errOut, code)
	}
	if out, _, _ := s.cli("", "sandbox", "get", id, "--json"); !strings.Contains(out, `"timeout_s": 7200`) && !strings.Contains(out, `"timeout_s":7200`) {
		t.Errorf("after extend: %s", out)
	}
	if _, _, code := s.cli("", "sandbox", "stop", id); code != 0 {
		t.Fatal("stop")
	}
	if out, errOut, code := s.cli("", "sandbox", "extend", id, "90s"); code != 0 || !strings.Contains(out, "90s from its next start") {
		t.Errorf("extend a stopped sandbox: %q %q %d", out, errOut, code)
	}
	if _, errOut, code := s.cli("", "sandbox", "extend", id, "99h"); code == 0 || !strings.Contains(errOut, "invalid_timeout") {
		t.Errorf("over the maximum: %q %d", errOut, code)
	}
}
