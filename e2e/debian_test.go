package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// debianServer starts a server on the namespace driver whose admin tenant
// has the template "debian": the Debian image (debootstrap, cached),
// pushed to a registry on loopback and pulled from there.
func debianServer(t *testing.T) *server {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's id-mapped layers; CI runs as root")
	}
	lay := testutil.DebianLayout(t)
	reg := testutil.StartRegistry(t, testutil.RegistryOpts{})
	reg.Push(t, lay, "library/debian:"+testutil.DebianSuite)
	s := startServer(t, "", "--driver", "namespace", "--registry-insecure", reg.Host)
	start := time.Now()
	tmpl, err := s.client().PullTemplate(t.Context(), api.CreateTemplateRequest{Name: "debian", Ref: reg.Ref("library/debian:" + testutil.DebianSuite)})
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	t.Logf("pulled and unpacked %s (%d bytes) in %s", tmpl.Digest, tmpl.Bytes, time.Since(start).Round(time.Millisecond))
	return s
}

// TestDebianAptGet: a Debian image pulled from a registry is a root the
// sandbox owns: apt-get installs a package as root inside, through the
// egress proxy under an allowlist naming only the Debian mirror, and the
// host's /usr is nowhere in it.
func TestDebianAptGet(t *testing.T) {
	s := debianServer(t)
	c := s.client()
	ctx := context.Background()

	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "debian",
		Network: &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"deb.debian.org"}}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	run := func(script string, timeout time.Duration) *api.ExecResult {
		t.Helper()
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"bash", "-c", script}, TimeoutMS: int(timeout.Milliseconds())})
		if err != nil {
			t.Fatalf("exec %q: %v", script, err)
		}
		return res
	}
	if res := run(". /etc/os-release; echo $ID $VERSION_CODENAME; id -u; which hello || echo no hello", time.Minute); res.Stdout != "debian "+testutil.DebianSuite+"\n0\nno hello\n" {
		t.Fatalf("the image's root: %+v", res)
	}
	hostOS, _ := os.ReadFile("/etc/os-release")
	if res := run("cat /etc/os-release", time.Minute); strings.Contains(string(hostOS), "PRETTY_NAME") && res.Stdout == string(hostOS) && !strings.Contains(res.Stdout, testutil.DebianSuite) {
		t.Errorf("the sandbox reads the host's /etc/os-release")
	}
	res := run("apt-get update -q && apt-get install -y -q --no-install-recommends hello && hello", 5*time.Minute)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Hello, world!") {
		t.Fatalf("apt-get install hello as root through the egress proxy: exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The mirror only: the egress proxy refuses another host before it
	// dials anything (bash's /dev/tcp to the sandbox's proxy port).
	if res := run(`exec 3<>/dev/tcp/127.0.0.1/3128; printf 'GET http://example.com/ HTTP/1.0\r\nHost: example.com\r\n\r\n' >&3; head -1 <&3`, time.Minute); !strings.Contains(res.Stdout, " 403 ") {
		t.Errorf("a host outside the allowlist, through the proxy: %q; want 403", res.Stdout)
	}
	// The agent's files stay read-only even for root.
	if res := run("touch /.hutch/x", time.Minute); res.ExitCode == 0 {
		t.Errorf("root inside wrote under /.hutch")
	}
}
