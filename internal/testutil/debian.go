package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// CacheEnv names the directory where tests keep what is slow to make
// (a Debian root made with debootstrap); /var/cache/hutch-ci by default.
// CI keeps it between runs on one machine.
const CacheEnv = "HUTCH_TEST_CACHE"

// DebianSuite is the Debian release of DebianLayout's image.
const DebianSuite = "bookworm"

// DebianMirror is where debootstrap and the image's apt get packages.
const DebianMirror = "http://deb.debian.org/debian"

// DebianLayout returns an OCI image layout holding a minimal Debian
// (debootstrap --variant=minbase) as one layer, with root as its user
// and / as its working directory, made once and cached (CacheEnv). It
// skips t when not root or when debootstrap is missing (Debian package
// debootstrap); it fails t when debootstrap cannot reach the mirror.
func DebianLayout(t testing.TB) string {
	t.Helper()
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = "/var/cache/hutch-ci"
	}
	dir := filepath.Join(cache, "debian-"+DebianSuite+"-oci")
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return dir
	}
	if os.Geteuid() != 0 {
		t.Skip("making the Debian image takes root (debootstrap); CI runs as root")
	}
	bin, err := exec.LookPath("debootstrap")
	if err != nil {
		t.Skipf("debootstrap not found (Debian package debootstrap): %v", err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	// One maker at a time across test binaries.
	lock, err := os.OpenFile(filepath.Join(cache, ".debian.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return dir
	}
	work, err := os.MkdirTemp(cache, ".debian-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	rootfs := filepath.Join(work, "rootfs")
	cmd := exec.Command(bin, "--variant=minbase", DebianSuite, rootfs, DebianMirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debootstrap: %v\n%s", err, out)
	}
	rootTar := filepath.Join(work, "rootfs.tar")
	// --numeric-owner: the image's ids as the root has them; no /proc or
	// /dev contents (the sandbox mounts its own).
	cmd = exec.Command("tar", "--numeric-owner", "--xattrs", "-C", rootfs, "-cf", rootTar,
		"--exclude=./proc/*", "--exclude=./dev/*", "--exclude=./sys/*", ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar the Debian root: %v\n%s", err, out)
	}
	ly, err := tarball.LayerFromFile(rootTar)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, ly)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.Cmd = []string{"bash"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "oci")
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(out, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
