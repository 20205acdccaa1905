package templates_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// secret is one of the tenant's secrets, there before a test's pulls.
type secret struct {
	spec  secrets.Spec
	value string
}

// memberStore is a store of the test's own with one tenant, and a
// context of a member of it.
func memberStore(t *testing.T) (store.Store, context.Context) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn, _, _, err := auth.CreateTenant(tenancy.System(context.Background()), st, "t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
	return st, ctx
}

// newService returns a template service over a store of its own, with the
// tenant's secrets have, a member's context and the layer store's
// directory.
func newService(t *testing.T, shared bool, reg templates.RegistryPolicy, have ...secret) (*templates.Service, context.Context, string) {
	t.Helper()
	st, ctx := memberStore(t)
	sealer, err := secrets.NewSealer(make([]byte, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.New(st, events.Config{})
	sec := secrets.New(secrets.Config{}, st, sealer, ev, nil)
	for _, h := range have {
		if _, err := sec.Create(ctx, h.spec, secrets.NewValue([]byte(h.value))); err != nil {
			t.Fatalf("create secret %s: %v", h.spec.Name, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "layers")
	svc, err := templates.New(templates.Config{Dir: dir, Shared: shared, Registries: reg}, st, sec, ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc, ctx, dir
}

func importFile(t *testing.T, svc *templates.Service, ctx context.Context, name, path string) (api.Template, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return svc.Import(ctx, name, f)
}

func dirs(t *testing.T, p string) []string {
	t.Helper()
	ents, err := os.ReadDir(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestImportResolveCollect: an archive becomes a template whose layers
// are in the store once; Resolve gives the driver their directories, the
// image's defaults and its user from its own /etc/passwd; a second
// template of the same image adds no layer; the last delete collects
// them.
func TestImportResolveCollect(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "shared", false: "flat"}[shared], func(t *testing.T) {
			if shared && os.Geteuid() != 0 {
				t.Skip("shared layers keep the image's owners: root only")
			}
			svc, ctx, dir := newService(t, shared, templates.RegistryPolicy{})
			opts := testutil.BusyboxOpts()
			opts.User = "app"
			opts.Layers = [][]testutil.TarEntry{{testutil.WhiteoutEntry("etc/group"), testutil.FileEntry("srv/x", "x\n", 0o644)}}
			img := testutil.BusyboxImage(t, opts)
			tm, err := importFile(t, svc, ctx, "bb", testutil.WriteDockerSave(t, img, "bb:1"))
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if tm.Source != "upload" || tm.Config.User != "app" || tm.Bytes < 1<<20 {
				t.Errorf("template = %+v", tm)
			}
			got, err := svc.Resolve(ctx, "bb")
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got.User.Name != "app" || got.User.UID != 1001 || got.User.GID != 1001 || got.User.Home != "/home/app" || got.WorkingDir != "/srv" || got.Shared != shared {
				t.Errorf("Resolve = %+v", got)
			}
			wantLayers := 2
			if !shared {
				wantLayers = 1
			}
			if len(got.Layers) != wantLayers {
				t.Fatalf("Resolve gives %d layer directories; want %d", len(got.Layers), wantLayers)
			}
			top := got.Layers[len(got.Layers)-1]
			if _, err := os.Stat(filepath.Join(top, "srv", "x")); err != nil {
				t.Errorf("the top layer lacks srv/x: %v", err)
			}
			if fi, err := os.Lstat(filepath.Join(top, "bin", "busybox")); (err == nil) == shared {
				// Shared: busybox is in the bottom layer, not the top.
				if shared {
					t.Errorf("the top shared layer holds bin/busybox (%v): layers are not kept apart", fi)
				} else {
					t.Errorf("the flattened image lacks bin/busybox: %v", err)
				}
			}
			// The same image again shares its layers.
			if _, err := importFile(t, svc, ctx, "bb2", testutil.WriteLayoutTar(t, img)); err != nil {
				t.Fatalf("second Import: %v", err)
			}
			sub := "sha256"
			if !shared {
				sub = "flat"
			}
			n := len(dirs(t, filepath.Join(dir, sub)))
			if shared && n != 2 {
				t.Errorf("two templates of one two-layer image keep %d layers; want 2", n)
			}
			if _, err := importFile(t, svc, ctx, "bb", testutil.WriteLayoutTar(t, img)); !errdefs.HasCode(err, "template_exists") {
				t.Errorf("a name taken: %v", err)
			}
			if err := svc.Delete(ctx, "bb"); err != nil {
				t.Fatal(err)
			}
			if err := svc.Delete(ctx, "bb2"); err != nil {
				t.Fatal(err)
			}
			if left := dirs(t, filepath.Join(dir, sub)); len(left) != 0 {
				t.Errorf("after the last delete the store keeps %v", left)
			}
			if _, err := svc.Resolve(ctx, "bb"); !errdefs.HasCode(err, "template_not_found") {
				t.Errorf("Resolve of a deleted template: %v", err)
			}
		})
	}
}

// TestRefused: what cannot become a template leaves nothing behind: a
// layer naming a path outside itself, an image whose user is not in its
// /etc/passwd, a name that is not one, an archive that is not an image.
func TestRefused(t *testing.T) {
	svc, ctx, dir := newService(t, os.Geteuid() == 0, templates.RegistryPolicy{})
	escape := testutil.BusyboxOpts()
	escape.Layers = [][]testutil.TarEntry{{testutil.FileEntry("../../outside", "x", 0o644)}}
	nouser := testutil.BusyboxOpts()
	nouser.User = "nobody-here"
	for _, tc := range []struct {
		name, code string
		archive    func() string
	}{
		{"escape", "layer_path_escapes", func() string { return testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, escape)) }},
		{"nouser", "image_user", func() string { return testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, nouser)) }},
		{"garbage", "", func() string {
			p := filepath.Join(t.TempDir(), "garbage.tar")
			var b bytes.Buffer
			w := tar.NewWriter(&b)
			w.WriteHeader(&tar.Header{Name: "hello", Size: 2, Mode: 0o644})
			w.Write([]byte("hi"))
			w.Close()
			os.WriteFile(p, b.Bytes(), 0o644)
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importFile(t, svc, ctx, tc.name, tc.archive())
			if err == nil || (tc.code != "" && !errdefs.HasCode(err, tc.code)) {
				t.Fatalf("Import = %v; want code %q", err, tc.code)
			}
			var e *errdefs.Error
			if !errors.As(err, &e) || errdefs.HasCode(err, "") {
				t.Errorf("Import error %v has no stable code", err)
			}
			if _, err := svc.Get(ctx, tc.name); !errdefs.HasCode(err, "template_not_found") {
				t.Errorf("a refused image left a template: %v", err)
			}
		})
	}
	if _, err := svc.Import(ctx, "host", strings.NewReader("")); !errdefs.HasCode(err, "invalid_template_name") {
		t.Errorf("the name host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside")); err == nil {
		t.Error("a layer wrote outside the store")
	}
	if removed, err := svc.Collect(context.Background()); err != nil {
		t.Errorf("Collect: %v", err)
	} else {
		t.Logf("collected what refused imports left: %v", removed)
	}
	for _, sub := range []string{"sha256", "flat", "incoming"} {
		if left := dirs(t, filepath.Join(dir, sub)); len(left) != 0 {
			t.Errorf("after refused imports and a collection %s holds %v", sub, left)
		}
	}
}

// TestConcurrentImports: imports of one image at once, under other names,
// all succeed and share one copy of each layer, while collections run.
func TestConcurrentImports(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("shared layers: root only")
	}
	svc, ctx, dir := newService(t, true, templates.RegistryPolicy{})
	archive := testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, testutil.BusyboxOpts()))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 6 {
		wg.Go(func() {
			_, err := importFile(t, svc, ctx, "bb"+string(rune('a'+i)), archive)
			errs <- err
		})
	}
	wg.Go(func() {
		_, err := svc.Collect(context.Background())
		errs <- err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(dirs(t, filepath.Join(dir, "sha256"))); n != 1 {
		t.Errorf("six templates of a one-layer image keep %d layers; want 1", n)
	}
	for i := range 6 {
		if _, err := svc.Resolve(ctx, "bb"+string(rune('a'+i))); err != nil {
			t.Error(err)
		}
	}
}

// TestPull: a pull with a registry secret bound to the registry, behind
// basic authentication and behind a token server on the registry's own
// host, from a registry the operator named; the same registry unnamed is
// not dialled.
func TestPull(t *testing.T) {
	for _, token := range []bool{false, true} {
		t.Run(map[bool]string{false: "basic", true: "token"}[token], func(t *testing.T) {
			reg := testutil.StartRegistry(t, testutil.RegistryOpts{Username: "u", Password: "pw", Token: token})
			reg.PushImage(t, testutil.BusyboxImage(t, testutil.BusyboxOpts()), "bb:1")
			pw := secret{secrets.Spec{Name: "PW", Kind: api.SecretKindRegistry, Registry: reg.Host}, "pw"}
			svc, ctx, _ := newService(t, os.Geteuid() == 0, templates.RegistryPolicy{Insecure: []string{reg.Host}}, pw)
			req := api.CreateTemplateRequest{Name: "bb", Ref: reg.Ref("bb:1"), Username: "u", PasswordSecret: "PW"}
			tm, err := svc.Pull(ctx, req)
			if err != nil {
				t.Fatalf("Pull: %v", err)
			}
			if tm.Source != reg.Ref("bb:1") {
				t.Errorf("source = %q", tm.Source)
			}
			req.Name, req.PasswordSecret = "bb2", "MISSING"
			if _, err := svc.Pull(ctx, req); !errdefs.HasCode(err, "secret_not_found") {
				t.Errorf("a password secret that does not exist: %v", err)
			}
			unnamed, ctx2, _ := newService(t, os.Geteuid() == 0, templates.RegistryPolicy{}, pw)
			req.PasswordSecret = "PW"
			if _, err := unnamed.Pull(ctx2, req); !errdefs.HasCode(err, "image_unreachable") || !strings.Contains(err.Error(), "private address") {
				t.Errorf("a loopback registry the operator did not name: %v; want image_unreachable, a private address", err)
			}
		})
	}
}
