package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestKubernetesApp: an app of the static preset on the kubernetes
// driver, its dev and live sandboxes Pods of an image template that holds
// the host's node: the dev preview serves, a task's edit reloads it, live
// keeps its files until a promotion (a snapshot of dev, a layer in the
// registry) brings them.
func TestKubernetesApp(t *testing.T) {
	cl := testutil.Kubernetes(t)
	ctx := context.Background()
	s := startServer(t, "", "--driver", "kubernetes", "--kubeconfig", cl.Kubeconfig,
		"--kubernetes-namespace", cl.Namespace, "--kubernetes-registry", cl.Registry)
	c := s.client()
	f, err := os.Open(testutil.WriteDockerSave(t, nodeImage(t), "node:e2e"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.ImportTemplate(ctx, "node", f); err != nil {
		t.Fatalf("import the node template: %v", err)
	}

	a := createApp(t, s, api.CreateAppRequest{Name: "kube", Preset: "static", Template: "node"}, 5*time.Minute)
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	waitFor(t, "the dev preview on a Pod", time.Minute, func() bool {
		st, body, _ := appGet(t, s, "kube", "/dev/", auth)
		return st == http.StatusOK && strings.Contains(body, "Hello from hutch")
	})
	for _, id := range []string{a.Dev, a.Live} {
		sb, err := c.GetSandbox(ctx, id)
		if err != nil || sb.Driver != "kubernetes" {
			t.Fatalf("the app's sandbox %s: %+v, %v; want one on the kubernetes driver", id, sb, err)
		}
	}
	task := runTask(t, s, a.ID, "sed", "-i", "s/Hello from hutch/Hello from a Pod/", "public/index.html")
	if task.Status != api.TaskSucceeded || !task.AppHealthy {
		t.Fatalf("task: %+v", task)
	}
	waitFor(t, "the edit on dev", time.Minute, func() bool {
		_, body, _ := appGet(t, s, "kube", "/dev/", auth)
		return strings.Contains(body, "Hello from a Pod")
	})
	if _, body, _ := appGet(t, s, "kube", "/", auth); !strings.Contains(body, "Hello from hutch") {
		t.Errorf("live changed with dev: %.200s", body)
	}
	mustCall(t, s, "POST", "/v1/apps/"+a.ID+"/promote", struct{}{}, nil, http.StatusOK)
	waitFor(t, "live after the promotion", time.Minute, func() bool {
		_, body, _ := appGet(t, s, "kube", "/", auth)
		return strings.Contains(body, "Hello from a Pod")
	})
	mustCall(t, s, "DELETE", "/v1/apps/"+a.ID, nil, nil, http.StatusNoContent)
}

// nodeImage is the suite's busybox image with the host's node and the
// libraries it loads (ldd), and sed, which a task runs.
func nodeImage(t *testing.T) v1.Image {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bin, err)
	}
	files := []string{bin}
	for _, m := range regexp.MustCompile(`(?m)(/\S+) \(0x`).FindAllStringSubmatch(string(out), -1) {
		files = append(files, m[1])
	}
	dirs := map[string]bool{"bin": true} // busybox's layer has /bin
	var layer []testutil.TarEntry
	for _, p := range files {
		for d := path.Dir(strings.TrimPrefix(p, "/")); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			layer = append(layer, testutil.DirEntry(d, 0o755))
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		body, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		layer = append(layer, testutil.FileEntry(strings.TrimPrefix(p, "/"), string(body), 0o755))
	}
	// Parents first, as a layer lists them.
	slices.SortFunc(layer, func(a, b testutil.TarEntry) int { return strings.Compare(a.Name, b.Name) })
	layer = append(layer, testutil.SymlinkEntry("bin/sed", "busybox"))
	opts := testutil.BusyboxOpts()
	opts.Env = []string{"PATH=/bin:/usr/bin:/usr/local/bin"}
	opts.Layers = [][]testutil.TarEntry{layer}
	return testutil.BusyboxImage(t, opts)
}
