package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/testutil"
)

// templateFleet is startFleet on the namespace driver (root: image
// templates need it), with the template collection every collect.
func templateFleet(t *testing.T, collect time.Duration) *fleet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("image templates need the namespace driver, which needs root")
	}
	return startFleet(t, func(node string, cfg *config.Config) {
		cfg.Driver, cfg.CgroupParent = "namespace", "hutch-tpltest-"+node
		cfg.TemplateCollectEvery = collect
		cfg.TemplateFetchTimeout = 20 * time.Second
		t.Cleanup(func() {
			dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + cfg.CgroupParent)
			for _, d := range dirs {
				os.Remove(d)
			}
		})
	})
}

// importBusybox imports a busybox image as name through c.
func importBusybox(t *testing.T, c *client.Client, name, tag string) {
	t.Helper()
	opts := testutil.BusyboxOpts()
	opts.Layers = append(opts.Layers, []testutil.TarEntry{testutil.FileEntry("etc/made-on", "node a\n", 0o644)})
	f, err := os.Open(testutil.WriteDockerSave(t, testutil.BusyboxImage(t, opts), tag))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.ImportTemplate(context.Background(), name, f); err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
}

// blobs lists the layer blobs a node keeps.
func blobs(t *testing.T, s *Server) []string {
	t.Helper()
	return testutil.Entries(t, filepath.Join(s.cfg.DataDir, "layers", "blobs"))
}

// TestFleetTemplateFetch: a template imported through node a starts a
// sandbox placed on node b, which fetched its layers from a over the
// node-to-node channel (through a's tap), checked, and now keeps them:
// the store names both nodes, the second sandbox on b fetches nothing,
// and the template's deletion through b leaves neither node its blobs.
func TestFleetTemplateFetch(t *testing.T) {
	f := templateFleet(t, time.Second)
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	importBusybox(t, viaA, "bb", "bb:fleet")
	if got := blobs(t, f.b); len(got) != 0 {
		t.Fatalf("node b keeps blobs %q before any sandbox of the template", got)
	}
	onB := api.CreateSandboxRequest{Template: "bb", NodeLabels: map[string]string{"zone": "b"}}

	sb, err := viaA.CreateSandbox(ctx, onB)
	if err != nil {
		t.Fatalf("create of a's template on b: %v", err)
	}
	if sb.Node != "b" {
		t.Fatalf("placed on %q, want b", sb.Node)
	}
	res, err := viaA.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "/etc/made-on"}})
	if err != nil || res.ExitCode != 0 || res.Stdout != "node a\n" {
		t.Fatalf("exec in b's sandbox of a's template: %+v, %v", res, err)
	}
	if !strings.Contains(f.tap.saw(), "GET /internal/v1/tenants/") {
		t.Error("node b did not fetch the layers from a over the node-to-node channel")
	}
	if !strings.Contains(f.tap.saw(), forward.HeaderSignature) {
		t.Error("node b's fetch carried no signature")
	}
	if a, b := blobs(t, f.a), blobs(t, f.b); len(a) == 0 || !slices.Equal(a, b) {
		t.Errorf("blobs on a %q, on b %q; want b to keep what a keeps", a, b)
	}
	p := tenancy.System(ctx)
	all, err := f.st.ListTemplates(p)
	if err != nil || len(all) != 1 || !slices.Equal(all[0].Nodes, []string{"a", "b"}) {
		t.Fatalf("the store's templates: %+v, %v; want bb held by a and b", all, err)
	}

	// The second sandbox of it on b starts from b's own disk.
	fetches := strings.Count(f.tap.saw(), "GET /internal/v1/")
	sb2, err := viaB.CreateSandbox(ctx, onB)
	if err != nil || sb2.Node != "b" {
		t.Fatalf("second create on b: %+v, %v", sb2, err)
	}
	if n := strings.Count(f.tap.saw(), "GET /internal/v1/"); n != fetches {
		t.Errorf("the second sandbox on b fetched again (%d calls, was %d)", n, fetches)
	}

	// Deleted through b: b collects at once, a within its collection
	// period.
	for _, id := range []string{sb.ID, sb2.ID} {
		if err := viaB.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := viaB.DeleteTemplate(ctx, "bb"); err != nil {
		t.Fatal(err)
	}
	if got := blobs(t, f.b); len(got) != 0 {
		t.Errorf("node b keeps blobs %q after the template's deletion", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(blobs(t, f.a)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("node a keeps blobs %q 10 s after the template's deletion through b", blobs(t, f.a))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFleetTemplateHolderDown: with the only node holding a template
// stopped, a create of it on the other node is 503 template_unavailable
// within the dial bound, and leaves no sandbox behind.
func TestFleetTemplateHolderDown(t *testing.T) {
	f := templateFleet(t, time.Minute)
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	importBusybox(t, viaA, "bb", "bb:down")
	// The test's heartbeat keeps a's row fresh: a is listed, but down.
	f.a.Shutdown(ctx)

	start := time.Now()
	_, err := viaB.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "bb", NodeLabels: map[string]string{"zone": "b"}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "template_unavailable" || ce.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("create with the holder down: %v; want 503 template_unavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	list, err := viaB.ListSandboxes(ctx, client.ListOptions{})
	if err != nil || len(list.Sandboxes) != 0 {
		t.Errorf("sandboxes after the refused create: %+v, %v; want none", list, err)
	}
	if got := blobs(t, f.b); len(got) != 0 {
		t.Errorf("node b keeps blobs %q from a fetch that failed", got)
	}
}

// TestFleetTemplateTenants: a node-to-node call for a blob is served in
// the tenant its path names only: another tenant's path and an unsigned
// request get no blob.
func TestFleetTemplateTenants(t *testing.T) {
	f := templateFleet(t, time.Minute)
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	importBusybox(t, viaA, "bb", "bb:tenants")
	sys := tenancy.System(ctx)
	all, err := f.st.ListTemplates(sys)
	if err != nil || len(all) != 1 {
		t.Fatalf("templates: %+v, %v", all, err)
	}
	tmpl := all[0]
	other, err := viaA.CreateTenant(ctx, api.CreateTenantRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	fw := forward.New(forward.Config{Node: "b", Key: []byte(strings.Repeat("c", 64)), Nodes: nodeURLs{f.st}})
	defer fw.Close()
	get := func(tenant string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
			"/internal/v1/tenants/"+tenant+"/templates/bb/blobs/"+strings.TrimPrefix(tmpl.Blobs[0].Digest, "sha256:"), nil)
		resp, err := fw.Call(req, "a")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Logf("tenant %s: %d %s", tenant, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	if got := get(tmpl.TenantID); got != http.StatusOK {
		t.Fatalf("the template's own tenant: %d, want 200", got)
	}
	if got := get(other.ID); got != http.StatusNotFound {
		t.Errorf("another tenant's path: %d, want 404", got)
	}
	// Unsigned, with the admin key: the API's, which has no such route.
	req, _ := http.NewRequest(http.MethodGet, "http://"+f.a.Addr().String()+
		"/internal/v1/tenants/"+tmpl.TenantID+"/templates/bb/blobs/"+strings.TrimPrefix(tmpl.Blobs[0].Digest, "sha256:"), nil)
	req.Header.Set("Authorization", "Bearer "+f.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("an unsigned request was given a blob")
	}
}
