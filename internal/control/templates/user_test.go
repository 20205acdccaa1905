package templates_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestUserResolvedInsideImage: an image whose /etc (or /etc/passwd) is a
// link to a directory of the host that holds a passwd naming the image's
// user has its user resolved in its own files: the link leads, as it
// would inside the sandbox, to the same path in the image's root, never
// to the host's. So the server never takes a uid, gid or home from a
// host file, and whether an import succeeds says nothing of the host's
// accounts.
func TestUserResolvedInsideImage(t *testing.T) {
	// The host's directory, readable by root alone, with accounts the
	// image must never see.
	host := t.TempDir()
	if err := os.Chmod(host, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"passwd": "app:x:4242:4242:host:/host-home:/bin/sh\nhostonly:x:4343:4343:host:/host-only:/bin/sh\n",
		"group":  "app:x:4242:\nhostgroup:x:4344:\n",
	} {
		if err := os.WriteFile(filepath.Join(host, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The image holds its own accounts at the same path in its root.
	inImage := strings.TrimPrefix(host, "/")
	own := []testutil.TarEntry{
		testutil.FileEntry(inImage+"/passwd", "app:x:1234:1235:image:/home/image:/bin/sh\n", 0o644),
		testutil.FileEntry(inImage+"/group", "app:x:1235:\n", 0o644),
	}
	up := strings.Repeat("../", strings.Count(host, "/")+3)
	for _, tc := range []struct {
		name, user string
		link       testutil.TarEntry
		code       string // refused with this code; "" resolves to the image's own app
	}{
		{"absolute", "app", testutil.SymlinkEntry("etc", host), ""},
		{"relative", "app", testutil.SymlinkEntry("etc", up+inImage), ""},
		{"file", "app", testutil.SymlinkEntry("etc/passwd", host+"/passwd"), ""},
		{"host-user", "hostonly", testutil.SymlinkEntry("etc", host), "image_user"},
		{"host-group", "app:hostgroup", testutil.SymlinkEntry("etc", host), "image_user"},
	} {
		for _, shared := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/shared", false: "/flat"}[shared], func(t *testing.T) {
				if shared && os.Geteuid() != 0 {
					t.Skip("shared layers keep the image's owners: root only")
				}
				svc, ctx, _ := newService(t, shared, templates.RegistryPolicy{})
				opts := testutil.BusyboxOpts()
				opts.User = tc.user
				opts.Layers = [][]testutil.TarEntry{append(append([]testutil.TarEntry{}, own...), tc.link)}
				_, err := importFile(t, svc, ctx, "img", testutil.WriteLayoutTar(t, testutil.BusyboxImage(t, opts)))
				if tc.code != "" {
					if !errdefs.HasCode(err, tc.code) {
						t.Fatalf("Import of an image whose user only the host's files name = %v; want %s", err, tc.code)
					}
					return
				}
				if err != nil {
					t.Fatalf("Import: %v", err)
				}
				got, err := svc.Resolve(ctx, "img")
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if got.User.UID == 4242 || got.User.Home == "/host-home" {
					t.Fatalf("the image's user came from the host's %s/passwd: %+v", host, got.User)
				}
				if got.User.UID != 1234 || got.User.GID != 1235 || got.User.Home != "/home/image" {
					t.Errorf("User = %+v; want the image's own app (1234:1235, /home/image)", got.User)
				}
			})
		}
	}
}
