package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestTemplates: an image pulled from a registry (with a password from
// the secret store) or uploaded as an archive becomes a template;
// sandboxes from it see the image's files and none of the host's, with the
// image's defaults; its layers are kept once; a template in use cannot be
// deleted, and deleting the last one that names a layer removes the layer.
func TestTemplates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's id-mapped layers; CI runs as root")
	}
	reg := testutil.StartRegistry(t, testutil.RegistryOpts{Username: "puller", Password: "s3cret-pw"})
	opts := testutil.BusyboxOpts()
	opts.User = "app"
	opts.Layers = [][]testutil.TarEntry{{testutil.FileEntry("srv/hello.txt", "from the image\n", 0o644), testutil.WhiteoutEntry("etc/group")}}
	img := testutil.BusyboxImage(t, opts)
	reg.Push(t, testutil.WriteLayout(t, img), "team/busybox:1")

	s := startServer(t, "", "--driver", "namespace", "--registry-insecure", reg.Host)
	c := s.client()
	ctx := context.Background()
	if info, err := c.Info(ctx); err != nil || !info.Features["images"] || !info.Features["snapshots"] {
		t.Fatalf("info features %v, %v; want images and snapshots", info, err)
	}

	// The password is a registry secret bound to the registry: an
	// ordinary secret, or one bound to another host, is refused.
	pull := api.CreateTemplateRequest{Name: "bb", Ref: reg.Ref("team/busybox:1"), Username: "puller", PasswordSecret: "PLAIN"}
	if _, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: "PLAIN", Value: "s3cret-pw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullTemplate(ctx, pull); client.Code(err) != "secret_not_registry" || client.StatusCode(err) != 400 {
		t.Errorf("pull with an env secret: %v; want 400 secret_not_registry", err)
	}
	if _, errOut, code := s.cli("s3cret-pw\n", "secret", "set", "GHCR_PW", "--registry", "ghcr.io"); code != 0 {
		t.Fatalf("secret set --registry ghcr.io: %d %s", code, errOut)
	}
	pull.PasswordSecret = "GHCR_PW"
	if _, err := c.PullTemplate(ctx, pull); client.Code(err) != "secret_registry_mismatch" || client.StatusCode(err) != 400 {
		t.Errorf("pull with a secret bound to another registry: %v; want 400 secret_registry_mismatch", err)
	}

	// A pull with the wrong password, then with the right one.
	if _, errOut, code := s.cli("wrong\n", "secret", "set", "REG_PW", "--registry", reg.Host); code != 0 || !strings.Contains(errOut, "registry password for "+reg.Host) {
		t.Fatalf("secret set --registry: %d %s", code, errOut)
	}
	pull.PasswordSecret = "REG_PW"
	if _, err := c.PullTemplate(ctx, pull); client.Code(err) != "image_unauthorized" {
		t.Fatalf("pull with a wrong password: %v; want image_unauthorized", err)
	}
	if _, err := c.ReplaceSecret(ctx, "REG_PW", api.ReplaceSecretRequest{Value: "s3cret-pw"}); err != nil {
		t.Fatal(err)
	}
	tmpl, err := c.PullTemplate(ctx, pull)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if tmpl.Layers != 2 || tmpl.Config.User != "app" || tmpl.Config.WorkingDir != "/srv" || !strings.HasPrefix(tmpl.Digest, "sha256:") {
		t.Errorf("pulled template = %+v", tmpl)
	}
	if _, err := c.PullTemplate(ctx, pull); client.Code(err) != "template_exists" {
		t.Errorf("a second pull of the same name: %v; want template_exists", err)
	}
	// A registry at a private address the operator did not name is not
	// dialled (127.0.0.2 is loopback: nothing leaves the host).
	other := pull
	other.Name, other.Ref = "elsewhere", strings.Replace(pull.Ref, "127.0.0.1", "127.0.0.2", 1)
	other.Username, other.PasswordSecret = "", ""
	if _, err := c.PullTemplate(ctx, other); client.Code(err) != "image_unreachable" || !strings.Contains(err.Error(), "private address") {
		t.Errorf("a pull from an unnamed private address: %v; want image_unreachable naming the private address", err)
	}

	// The same image uploaded as `docker save` would write it shares the
	// layers: the store holds each once.
	f, err := os.Open(testutil.WriteDockerSave(t, img, "busybox:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.ImportTemplate(ctx, "bb-saved", f); err != nil {
		t.Fatalf("import: %v", err)
	}
	layers := func() int {
		ents, err := os.ReadDir(filepath.Join(s.dataDir, "layers", "sha256"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n
	}
	if n := layers(); n != 2 {
		t.Errorf("the layer store holds %d layers for two templates of one two-layer image; want 2", n)
	}
	list, err := c.ListTemplates(ctx)
	if err != nil || len(list.Templates) != 2 {
		t.Fatalf("templates: %+v, %v", list, err)
	}

	// A sandbox from the template.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "bb", Env: map[string]string{"MINE": "yes"}})
	if err != nil {
		t.Fatalf("create from the template: %v", err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; pwd; cat hello.txt; echo $GREETING $MINE; ls /usr /lib 2>&1 | wc -l; test -e /etc/group || echo no group"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec in a sandbox from the template: %+v, %v", res, err)
	}
	if want := "1001\n/srv\nfrom the image\nhello yes\n2\nno group\n"; res.Stdout != want {
		t.Errorf("in the sandbox:\n%s\nwant (the image's user, directory, files and env; no /usr, no /lib; the whiteout applied):\n%s", res.Stdout, want)
	}
	if sb.Template != "bb" {
		t.Errorf("sandbox template = %q", sb.Template)
	}

	// Snapshots, fork and restore of it.
	mustRun := func(id, script string) string {
		t.Helper()
		res, err := c.Exec(ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", script}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("sh -c %q in %s: %+v, %v", script, id, res, err)
		}
		return res.Stdout
	}
	mustRun(sb.ID, "cd && echo one > state && echo doomed > gone")
	snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{Name: "one"})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	mustRun(sb.ID, "cd && echo two > state && rm gone")
	forks, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 2, Labels: map[string]string{"fork": "yes"}})
	if err != nil || len(forks.Sandboxes) != 2 {
		t.Fatalf("fork: %+v, %v", forks, err)
	}
	for _, f := range forks.Sandboxes {
		if f.Template != "bb" || f.Labels["fork"] != "yes" {
			t.Errorf("fork %+v: want template bb and the label", f)
		}
		if got := mustRun(f.ID, "cd && cat state; ls; hostname"); got != "two\nstate\n"+f.ID+"\n" {
			t.Errorf("in fork %s: %q; want the sandbox's files as they were, under its own name", f.ID, got)
		}
		t.Cleanup(func() { c.DeleteSandbox(context.Background(), f.ID) })
	}
	if _, err := c.Restore(ctx, sb.ID, api.RestoreRequest{Snapshot: snap.ID}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := mustRun(sb.ID, "cd && cat state; ls"); got != "one\ngone\nstate\n" {
		t.Errorf("after restore: %q; want the snapshot's files", got)
	}
	// A template made from the snapshot: its files as a layer over the
	// image, the image's defaults kept.
	prepared, err := c.PullTemplate(ctx, api.CreateTemplateRequest{Name: "bb-prepared", Snapshot: snap.ID})
	if err != nil {
		t.Fatalf("template from a snapshot: %v", err)
	}
	if prepared.Layers != 3 || prepared.Config.User != "app" {
		t.Errorf("template from a snapshot = %+v; want the image's two layers and the snapshot's, the image's user", prepared)
	}
	fromTmpl, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "bb-prepared"})
	if err != nil {
		t.Fatalf("create from the prepared template: %v", err)
	}
	if got := mustRun(fromTmpl.ID, "id -u; cd && cat state gone; hostname"); got != "1001\none\ndoomed\n"+fromTmpl.ID+"\n" {
		t.Errorf("in a sandbox from the prepared template: %q", got)
	}
	// A sandbox started from the snapshot.
	again, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Snapshot: snap.ID})
	if err != nil {
		t.Fatalf("create from a snapshot: %v", err)
	}
	t.Cleanup(func() { c.DeleteSandbox(context.Background(), again.ID) })
	if got := mustRun(again.ID, "cd && cat state gone"); got != "one\ndoomed\n" {
		t.Errorf("in a sandbox from the snapshot: %q", got)
	}

	// Deleting a template in use is refused, by a sandbox or a snapshot.
	if err := c.DeleteTemplate(ctx, "bb"); client.Code(err) != "template_in_use" {
		t.Errorf("delete a template in use: %v; want template_in_use", err)
	}
	for _, id := range append([]string{sb.ID, again.ID, fromTmpl.ID}, forks.Sandboxes[0].ID, forks.Sandboxes[1].ID) {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteTemplate(ctx, "bb"); client.Code(err) != "template_in_use" {
		t.Errorf("delete a template a snapshot holds: %v; want template_in_use", err)
	}
	if err := c.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTemplate(ctx, "bb"); err != nil {
		t.Fatalf("delete the template: %v", err)
	}
	if err := c.DeleteTemplate(ctx, "bb-prepared"); err != nil {
		t.Fatalf("delete the prepared template: %v", err)
	}
	if n := layers(); n != 2 {
		t.Errorf("after deleting one of two templates of the image the store holds %d layers; want 2", n)
	}
	if err := c.DeleteTemplate(ctx, "bb-saved"); err != nil {
		t.Fatal(err)
	}
	if n := layers(); n != 0 {
		t.Errorf("after deleting every template the store holds %d layers; want 0", n)
	}
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "bb"}); client.Code(err) != "invalid_template" {
		t.Errorf("create from a deleted template: %v; want invalid_template", err)
	}
}

// TestTemplateFromHostSnapshot: an environment prepared once in a sandbox
// of the host template becomes a template; sandboxes from it have the
// prepared files over the host's system directories, with no copy made.
func TestTemplateFromHostSnapshot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's id-mapped layers; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	src, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, src.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "mkdir -p tools && echo ready > tools/prepared && rm -f /workspace/none"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("prepare: %+v, %v", res, err)
	}
	snap, err := c.CreateSnapshot(ctx, src.ID, api.CreateSnapshotRequest{Name: "prepared"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullTemplate(ctx, api.CreateTemplateRequest{Name: "prepared", Snapshot: snap.ID}); err != nil {
		t.Fatalf("template from a host sandbox's snapshot: %v", err)
	}
	// The template keeps its own copy: the snapshot may go.
	if err := c.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "prepared"})
	if err != nil {
		t.Fatalf("create from it: %v", err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; pwd; cat tools/prepared; hostname; test -x /usr/bin/env && echo host usr"}})
	if err != nil || res.Stdout != "1000\n/workspace\nready\n"+sb.ID+"\nhost usr\n" {
		t.Errorf("in a sandbox from the template: %+v, %v", res, err)
	}
	if err := c.DeleteTemplate(ctx, "prepared"); client.Code(err) != "template_in_use" {
		t.Errorf("delete the template in use: %v", err)
	}
	for _, id := range []string{sb.ID, src.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteTemplate(ctx, "prepared"); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(s.dataDir, "layers", "snap")); len(left) != 0 {
		t.Errorf("the template's layer stays: %v", left)
	}
}

// TestSnapshotSweep: files in the snapshot directory that no snapshot
// names (a server stopped between a copy and its record) go at the next
// start; a recorded snapshot's stay.
func TestSnapshotSweep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's snapshots; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	data := s.dataDir
	s.stop(false)
	orphan := filepath.Join(data, "snapshots", "01m87zzzzzzzzzzzzzzzzzzzzz")
	if err := os.MkdirAll(filepath.Join(orphan, "fs", "etc"), 0o700); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, data, "--driver", "namespace")
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("an unrecorded snapshot's files survived the start-up sweep: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "snapshots", snap.ID)); err != nil {
		t.Errorf("a recorded snapshot's files went: %v", err)
	}
	if err := s2.client().DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := s2.client().DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultTemplate: with --default-template naming an image template,
// a create that names none starts from the tenant's template of that name;
// host stays available by name.
func TestDefaultTemplate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's id-mapped layers; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace", "--default-template", "base")
	c := s.client()
	ctx := context.Background()
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{}); client.Code(err) != "invalid_template" {
		t.Errorf("a default template the tenant lacks: %v; want invalid_template", err)
	}
	f, err := os.Open(testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, testutil.BusyboxOpts())))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := c.ImportTemplate(ctx, "base", f); err != nil {
		t.Fatal(err)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil || sb.Template != "base" {
		t.Fatalf("a create naming no template: %+v, %v; want template base", sb, err)
	}
	host, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "host"})
	if err != nil || host.Template != "host" {
		t.Fatalf("host by name: %+v, %v", host, err)
	}
	for _, id := range []string{sb.ID, host.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestForkAllOrNone: a fork the tenant's quota cannot hold whole makes no
// sandbox at all, and drops its snapshot.
func TestForkAllOrNone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's snapshots; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace", "--tenant-max-sandboxes", "3")
	ctx := context.Background()
	tn, err := s.client().CreateTenant(ctx, api.CreateTenantRequest{Name: "forker"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(s.url, tn.Key.Secret)
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteSandbox(context.Background(), sb.ID) })
	if _, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 3}); client.Code(err) != "quota_exceeded" {
		t.Fatalf("a fork of 3 with room for 2: %v; want quota_exceeded", err)
	}
	list, err := c.ListSandboxes(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, l := range list.Sandboxes {
		if l.State != api.StateDestroyed && l.State != api.StateFailed {
			live++
		}
	}
	if live != 1 {
		t.Errorf("after a refused fork the tenant has %d sandboxes not destroyed; want 1, the original", live)
	}
	if snaps, err := c.ListSnapshots(ctx, ""); err != nil || len(snaps.Snapshots) != 0 {
		t.Errorf("the fork's snapshot stays: %+v, %v", snaps, err)
	}
	forks, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 2})
	if err != nil || len(forks.Sandboxes) != 2 {
		t.Fatalf("a fork of 2: %+v, %v", forks, err)
	}
	for _, f := range forks.Sandboxes {
		if err := c.DeleteSandbox(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
	}
}
