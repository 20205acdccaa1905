package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestAppOnImage: a preset runs on an image rather than the host's
// userland. The image is built here from Debian's packages: the Debian
// image (debootstrap), pulled from a registry on loopback, with nodejs
// installed by apt-get in a sandbox through the egress proxy, saved as a
// template from that sandbox's snapshot. An app of the static preset on
// it serves its dev preview, hot-reloads a task's edit, and promotes.
func TestAppOnImage(t *testing.T) {
	s := debianServer(t)
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "debian",
		Network: &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"deb.debian.org"}}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"bash", "-c",
		"apt-get update -q && apt-get install -y -q --no-install-recommends nodejs && node --version"}, TimeoutMS: int((10 * time.Minute).Milliseconds())})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("apt-get install nodejs: %v %+v", err, res)
	}
	t.Logf("nodejs %s installed from Debian in %s", strings.TrimSpace(res.Stdout[strings.LastIndex(strings.TrimSpace(res.Stdout), "\n")+1:]),
		time.Since(start).Round(time.Second))
	var snap api.Snapshot
	mustCall(t, s, "POST", "/v1/sandboxes/"+sb.ID+"/snapshots", api.CreateSnapshotRequest{Name: "node"}, &snap, http.StatusCreated)
	mustCall(t, s, "POST", "/v1/templates", map[string]string{"name": "debian-node", "snapshot": snap.ID}, nil, http.StatusCreated)
	mustCall(t, s, "DELETE", "/v1/sandboxes/"+sb.ID, nil, nil, http.StatusNoContent)

	a := createApp(t, s, api.CreateAppRequest{Name: "deb", Preset: "static", Template: "debian-node"}, 3*time.Minute)
	if a.Template != "debian-node" {
		t.Errorf("app template %q", a.Template)
	}
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	var last string
	defer func() {
		if t.Failed() {
			var ps api.AppProcesses
			call(t, s.url, s.key, "GET", "/v1/apps/"+a.ID+"/processes", nil, &ps)
			t.Logf("last answer: %.300s\nprocesses: %+v", last, ps)
		}
	}()
	waitFor(t, "the dev preview on the image", time.Minute, func() bool {
		st, body, _ := appGet(t, s, "deb", "/dev/", auth)
		last = body
		return st == 200 && strings.Contains(body, "Hello from hutch")
	})
	// The host's userland is nowhere: the app's node is Debian's.
	out, err := c.Exec(ctx, a.Dev, api.ExecRequest{Cmd: []string{"sh", "-c", ". /etc/os-release; echo $VERSION_CODENAME; command -v node"}})
	if err != nil || out.Stdout != testutil.DebianSuite+"\n/usr/bin/node\n" {
		t.Errorf("the app's sandbox: %v %+v", err, out)
	}
	task := runTask(t, s, a.ID, "sed", "-i", "s/Hello from hutch/Hello from Debian/", "public/index.html")
	if task.Status != api.TaskSucceeded || !task.AppHealthy {
		t.Fatalf("task: %+v", task)
	}
	waitFor(t, "the edit on dev", time.Minute, func() bool {
		_, body, _ := appGet(t, s, "deb", "/dev/", auth)
		return strings.Contains(body, "Hello from Debian")
	})
	mustCall(t, s, "POST", "/v1/apps/"+a.ID+"/promote", struct{}{}, nil, http.StatusOK)
	if _, body, _ := appGet(t, s, "deb", "/", auth); !strings.Contains(body, "Hello from Debian") {
		t.Errorf("live after promotion: %.200s", body)
	}
}
