package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
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
	if out, _, code := s.cli("", "exec", "--root", id, "--", "id", "-u"); code != 0 || out != "0\n" {
		t.Errorf("exec --root: %q (exit %d), want uid 0", out, code)
	}
	if out, _, code := s.cli("", "exec", "-i", "--root", id, "--", "id", "-u"); code != 0 || out != "0\n" {
		t.Errorf("exec -i --root: %q (exit %d), want uid 0", out, code)
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

// TestCLIVerbs drives the docker-like verbs, the per-resource commands
// and --json against a real server.
func TestCLIVerbs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's pause, snapshots and forks; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace")
	out, errOut, code := s.cli("", "sandbox", "create")
	if code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	id := strings.TrimSpace(out)

	// Listing, inspecting, errors.
	if out, _, _ := s.cli("", "ls", "-q"); out != id+"\n" {
		t.Errorf("ls -q = %q", out)
	}
	var list []api.Sandbox
	if out, _, code := s.cli("", "inspect", id); json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].ID != id || code != 0 {
		t.Errorf("inspect = %q %d", out, code)
	}
	var apiErr api.Error
	if out, errOut, code := s.cli("", "--json", "sandbox", "get", "01jzzzzzzzzzzzzzzzzzzzzzzz"); code != 1 || out != "" ||
		json.Unmarshal([]byte(errOut), &apiErr) != nil || apiErr.Error.Code != "sandbox_not_found" {
		t.Errorf("--json get unknown: %q %q %d", out, errOut, code)
	}
	if _, errOut, code := s.cli("", "sandbx", "ls"); code != 2 || !strings.Contains(errOut, "did you mean sandbox?") || strings.Contains(errOut, "hutch: hutch:") {
		t.Errorf("sandbx: %q %d", errOut, code)
	}

	// exec: -i streams stdin; --json prints the API's result.
	if out, _, code := s.cli("a\nb\n", "exec", "-i", id, "--", "sh", "-c", "cat; exit 4"); out != "a\nb\n" || code != 4 {
		t.Errorf("exec -i = %q %d", out, code)
	}
	var res api.ExecResult
	if out, _, code := s.cli("", "exec", "--json", id, "--", "echo", "hi"); json.Unmarshal([]byte(out), &res) != nil || res.Stdout != "hi\n" || code != 0 {
		t.Errorf("exec --json = %q %d", out, code)
	}

	// attach: the output so far and after, stdin in, the exit status out.
	out, _, _ = s.cli("", "start", id, "--", "sh", "-c", "echo ready; read x; echo got $x; exit 5")
	pid := strings.TrimSpace(out)
	if out, errOut, code := s.cli("hi\n", "attach", id, pid); !strings.Contains(out, "got hi") || code != 5 {
		t.Errorf("attach = %q %q %d", out, errOut, code)
	}

	// Files one call at a time, and cp's summary and local errors.
	if _, errOut, code := s.cli("hello", "cp", "-", id+":d/a.txt"); code != 0 || errOut != "hutch: copied 1 file, 5 bytes\n" {
		t.Errorf("cp in: %q %d", errOut, code)
	}
	if _, errOut, code := s.cli("", "cp", filepath.Join(t.TempDir(), "none"), id+":x"); code != 1 || !strings.HasPrefix(errOut, "hutch: local: open ") {
		t.Errorf("cp of a missing local file: %q %d", errOut, code)
	}
	if out, _, code := s.cli("", "fs", "mkdir", id, "e/f"); code != 0 || !strings.HasSuffix(out, "/e/f\n") {
		t.Errorf("fs mkdir = %q %d", out, code)
	}
	if _, errOut, code := s.cli("", "fs", "mv", id, "d/a.txt", "e/b.txt"); code != 0 {
		t.Errorf("fs mv: %q", errOut)
	}
	if out, _, _ := s.cli("", "fs", "ls", id, "e"); !strings.Contains(out, "b.txt") || !strings.Contains(out, "f/") {
		t.Errorf("fs ls = %q", out)
	}
	if out, _, _ := s.cli("", "fs", "cat", id, "e/b.txt"); out != "hello" {
		t.Errorf("fs cat = %q", out)
	}
	if _, errOut, code := s.cli("", "fs", "rm", "-r", id, "e"); code != 0 {
		t.Errorf("fs rm -r: %q", errOut)
	}

	// Network and ports.
	var n api.Network
	if out, errOut, code := s.cli("", "network", "set", id, "--egress", "none", "--json"); json.Unmarshal([]byte(out), &n) != nil || n.Policy.Egress != "none" || code != 0 {
		t.Errorf("network set = %q %q %d", out, errOut, code)
	}
	if out, _, _ := s.cli("", "network", "get", id); !strings.Contains(out, "none") {
		t.Errorf("network get = %q", out)
	}
	if out, errOut, code := s.cli("", "port", "public", id, "8080"); code != 0 || !strings.Contains(out, "8080-"+id) {
		t.Errorf("port public = %q %q %d", out, errOut, code)
	}
	if out, _, _ := s.cli("", "port", "ls", id); !strings.Contains(out, "public") {
		t.Errorf("port ls = %q", out)
	}
	if out, _, code := s.cli("", "port", "url", "--ttl", "10m", id, "8080"); code != 0 || !strings.Contains(out, "8080-"+id) {
		t.Errorf("port url = %q %d", out, code)
	}

	// Snapshots, forks, pause and resume.
	out, errOut, code = s.cli("", "snapshot", "create", id)
	if code != 0 {
		t.Fatalf("snapshot create: %q", errOut)
	}
	snap := strings.TrimSpace(out)
	if out, _, _ := s.cli("", "snapshot", "ls", "--sandbox", id); !strings.Contains(out, snap) {
		t.Errorf("snapshot ls = %q", out)
	}
	if out, errOut, code := s.cli("", "fork", id); code != 0 || len(strings.Fields(out)) != 1 {
		t.Errorf("fork = %q %q %d", out, errOut, code)
	}
	for _, verb := range []string{"pause", "resume"} {
		if out, errOut, code := s.cli("", verb, id); code != 0 || out != id+"\n" {
			t.Errorf("%s = %q %q %d", verb, out, errOut, code)
		}
	}
	if _, errOut, code := s.cli("", "snapshot", "rm", snap); code != 0 {
		t.Errorf("snapshot rm: %q", errOut)
	}

	// rm --all leaves nothing.
	if _, errOut, code := s.cli("", "rm", "--all"); code != 0 {
		t.Errorf("rm --all: %q", errOut)
	}
	if out, _, _ := s.cli("", "ls", "-q"); out != "" {
		t.Errorf("after rm --all, ls -q = %q", out)
	}
}
