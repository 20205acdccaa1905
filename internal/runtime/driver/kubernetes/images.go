package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// images are the references, by digest, of the images the driver makes:
// the agent's (hutch-agent alone, which each Pod's init container copies
// into the Pod) and the base template's.
type images struct {
	agent, base string
}

// The base template: the host's static busybox with every applet linked,
// an unprivileged user, and its workspace.
const (
	hostTemplate = "host"
	busyboxPath  = "/bin/busybox"
	// userUID is the base template's user, whom commands run as unless
	// a sandbox asks for root.
	userUID   = 1000
	workspace = "/workspace"
	// basePath is the PATH of the base template's commands.
	basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// pushTimeout bounds pushing the images at Open.
const pushTimeout = 2 * time.Minute

// pushImages builds the agent's and the base template's images and
// pushes them to registry (what is there already is not sent again).
func pushImages(ctx context.Context, registry, agentPath string, log *slog.Logger) (images, error) {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	agent, err := os.ReadFile(agentPath)
	if err != nil {
		return images{}, fmt.Errorf("read the agent: %w", err)
	}
	agentImg, err := imageOf(v1.Config{Entrypoint: []string{"/hutch-agent"}},
		[]tarFile{{name: "hutch-agent", mode: 0o555, body: agent}})
	if err != nil {
		return images{}, err
	}
	baseImg, err := baseImage()
	if err != nil {
		return images{}, err
	}
	var out images
	for _, im := range []struct {
		repo string
		img  v1.Image
		ref  *string
	}{{"hutch/agent", agentImg, &out.agent}, {"hutch/base", baseImg, &out.base}} {
		start := time.Now()
		ref, err := push(ctx, registry, im.repo, im.img)
		if err != nil {
			return images{}, err
		}
		*im.ref = ref
		log.Debug("image pushed", "image", ref, "took", time.Since(start).Round(time.Millisecond))
	}
	return out, nil
}

// push writes img to repo in registry, tagged by its digest, and
// returns its reference by digest.
func push(ctx context.Context, registry, repo string, img v1.Image) (string, error) {
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return pushTagged(ctx, registry, repo, digest.Hex[:16], img)
}

// pushTagged writes img to repo in registry, tagged tag, and returns its
// reference by digest. A registry on a loopback or private address is
// spoken to over plain HTTP, as the cluster's own test registries are.
func pushTagged(ctx context.Context, registry, repo, tag string, img v1.Image) (string, error) {
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	ref, err := name.NewTag(registry+"/"+repo+":"+tag, nameOptions(registry)...)
	if err != nil {
		return "", fmt.Errorf("--kubernetes-registry %q: %w", registry, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s to the cluster's registry: %w", ref, err)
	}
	return registry + "/" + repo + "@" + digest.String(), nil
}

// nameOptions are how references to registry are parsed: plain HTTP for
// one on a loopback or private address.
func nameOptions(registry string) []name.Option {
	if plainHTTP(registry) {
		return []name.Option{name.Insecure}
	}
	return nil
}

// plainHTTP says whether the registry at host[:port] is on a loopback
// or private address (or localhost).
func plainHTTP(registry string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}

// baseImage is the base template's image: the host's static busybox,
// each of its applets a link in /bin (bash is ash), root and user (uid
// 1000, home /workspace), and /tmp.
func baseImage() (v1.Image, error) {
	bin, applets, err := staticBusybox()
	if err != nil {
		return nil, err
	}
	files := []tarFile{
		{name: "bin", dir: true, mode: 0o755},
		{name: "bin/busybox", mode: 0o755, body: bin},
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/passwd", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nuser:x:%d:%[1]d:user:%s:/bin/sh\n", userUID, workspace))},
		{name: "etc/group", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\nuser:x:%d:\n", userUID))},
		{name: "root", dir: true, mode: 0o700},
		{name: "tmp", dir: true, mode: 0o1777},
		{name: "var", dir: true, mode: 0o755},
		{name: "var/tmp", dir: true, mode: 0o1777},
		{name: strings.TrimPrefix(workspace, "/"), dir: true, mode: 0o755, uid: userUID},
	}
	for _, a := range applets {
		if a != "busybox" {
			files = append(files, tarFile{name: "bin/" + a, link: "busybox"})
		}
	}
	// Clients run commands as "/bin/bash -l -c ..." (the E2B SDK does):
	// here bash is busybox's ash, which takes those flags.
	files = append(files, tarFile{name: "bin/bash", mode: 0o755, body: []byte("#!/bin/sh\n# bash is busybox's ash in hutch's base template\nexec /bin/ash \"$@\"\n")})
	return imageOf(v1.Config{Env: []string{"PATH=" + basePath}, WorkingDir: workspace}, files)
}

// staticBusybox reads the host's busybox and lists its applets; it must
// be statically linked, to run in any image (Debian's busybox-static).
func staticBusybox() ([]byte, []string, error) {
	f, err := elf.Open(busyboxPath)
	if err != nil {
		return nil, nil, fmt.Errorf("the kubernetes driver's base template is the host's static busybox: %w (install Debian's busybox-static)", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, nil, fmt.Errorf("%s is dynamically linked; the kubernetes driver's base template needs a static one (Debian's busybox-static)", busyboxPath)
		}
	}
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, nil, err
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s --list: %w", busyboxPath, err)
	}
	return bin, strings.Fields(string(out)), nil
}

// tarFile is one entry of a layer imageOf makes: a directory, a symlink
// (link set) or a regular file.
type tarFile struct {
	name string
	dir  bool
	link string
	mode int64
	uid  int
	body []byte
}

// imageOf is an OCI image of this host's platform with config and one
// layer of files.
func imageOf(config v1.Config, files []tarFile) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return ociImage(config, layer)
}

// ociImage is an OCI image of this host's platform with config and one
// layer.
func ociImage(config v1.Config, layer v1.Layer) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		OS: "linux", Architecture: runtime.GOARCH, Config: config, RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(img, layer)
}
