package testutil

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/hutchdev/hutch/internal/base/osthread"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/bcrypt"
)

// TarEntry is one entry of a layer Layer builds.
type TarEntry struct {
	Name     string
	Type     byte   // tar.TypeReg (also when 0), TypeDir, TypeSymlink, TypeLink
	Body     string // a regular file's content
	Mode     int64  // permission bits; 0 is 0644 for a file, 0755 for a directory
	Linkname string // a link's target
	UID, GID int
}

// FileEntry is a regular file holding body.
func FileEntry(name, body string, mode int64) TarEntry {
	return TarEntry{Name: name, Type: tar.TypeReg, Body: body, Mode: mode}
}

// DirEntry is a directory.
func DirEntry(name string, mode int64) TarEntry {
	return TarEntry{Name: name, Type: tar.TypeDir, Mode: mode}
}

// SymlinkEntry is a symlink to target.
func SymlinkEntry(name, target string) TarEntry {
	return TarEntry{Name: name, Type: tar.TypeSymlink, Linkname: target}
}

// WhiteoutEntry deletes p ("etc/motd") from the layers below: the entry
// etc/.wh.motd.
func WhiteoutEntry(p string) TarEntry {
	dir, base := path.Split(p)
	return FileEntry(dir+".wh."+base, "", 0o644)
}

// OpaqueEntry makes dir opaque: what the layers below put in it is
// gone, and only this layer's entries under it are left.
func OpaqueEntry(dir string) TarEntry {
	return FileEntry(path.Join(dir, ".wh..wh..opq"), "", 0o644)
}

// layerTime dates every entry Layer writes, so the same entries make
// the same layer.
var layerTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Layer is an OCI layer (tar+gzip) of entries, in order.
func Layer(t testing.TB, entries ...TarEntry) v1.Layer {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Linkname: e.Linkname,
			Uid: e.UID, Gid: e.GID, ModTime: layerTime, Format: tar.FormatPAX,
		}
		switch hdr.Typeflag {
		case 0, tar.TypeReg:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.Body))
			if hdr.Mode == 0 {
				hdr.Mode = 0o644
			}
		case tar.TypeDir:
			if hdr.Mode == 0 {
				hdr.Mode = 0o755
			}
		case tar.TypeSymlink, tar.TypeLink:
			hdr.Mode = 0o777
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("Layer: %s: %v", e.Name, err)
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			t.Fatalf("Layer: %s: %v", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := raw.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ImageOpts says what BusyboxImage's config holds; the zero value is an
// empty config. BusyboxOpts is BusyboxLayout's.
type ImageOpts struct {
	Env        []string
	WorkingDir string
	User       string
	Entrypoint []string
	Cmd        []string
	// Platform is the config's "os/arch[/variant]"; "" is the host's.
	// Only the label changes: the busybox binary is the host's.
	Platform string
	// Layers are layers above busybox's, bottom first: a whiteout or an
	// opaque directory over busybox's files, say.
	Layers [][]TarEntry
}

// BusyboxOpts are the options of BusyboxLayout's image: Env
// PATH=/bin and GREETING=hello, WorkingDir /srv, User root.
func BusyboxOpts() ImageOpts {
	return ImageOpts{Env: []string{"PATH=/bin", "GREETING=hello"}, WorkingDir: "/srv"}
}

// BusyboxCommands are the names in /bin that BusyboxImage links to
// busybox.
var BusyboxCommands = []string{"sh", "ls", "cat", "echo", "id", "touch", "mkdir", "rm", "sleep", "env", "true"}

// BusyboxImage builds an OCI image whose first layer holds the host's
// /bin/busybox with BusyboxCommands linked to it, /etc/passwd and
// /etc/group with root and app (uid and gid 1001, home /home/app),
// and the directories /srv, /tmp (1777), /root and /home/app (app's);
// opts says the config and the layers above. It skips t when the host
// has no static busybox (Debian package busybox-static).
func BusyboxImage(t testing.TB, opts ImageOpts) v1.Image {
	t.Helper()
	bin := staticBusybox(t)
	entries := []TarEntry{
		DirEntry("bin", 0o755),
		{Name: "bin/busybox", Type: tar.TypeReg, Body: string(bin), Mode: 0o755},
	}
	for _, c := range BusyboxCommands {
		entries = append(entries, SymlinkEntry("bin/"+c, "busybox"))
	}
	entries = append(entries,
		DirEntry("etc", 0o755),
		FileEntry("etc/passwd", "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1001:app:/home/app:/bin/sh\n", 0o644),
		FileEntry("etc/group", "root:x:0:\napp:x:1001:\n", 0o644),
		DirEntry("home", 0o755),
		TarEntry{Name: "home/app", Type: tar.TypeDir, Mode: 0o755, UID: 1001, GID: 1001},
		DirEntry("root", 0o700),
		DirEntry("srv", 0o755),
		DirEntry("tmp", 0o1777),
	)

	p := runtime.GOOS + "/" + runtime.GOARCH
	if opts.Platform != "" {
		p = opts.Platform
	}
	plat, err := v1.ParsePlatform(p)
	if err != nil {
		t.Fatalf("BusyboxImage: %v", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		OS: plat.OS, Architecture: plat.Architecture, Variant: plat.Variant,
		Config: v1.Config{
			Env: opts.Env, WorkingDir: opts.WorkingDir, User: opts.User,
			Entrypoint: opts.Entrypoint, Cmd: opts.Cmd,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		t.Fatal(err)
	}
	layers := []v1.Layer{Layer(t, entries...)}
	for _, l := range opts.Layers {
		layers = append(layers, Layer(t, l...))
	}
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// staticBusybox reads the host's /bin/busybox, skipping t unless it is
// there and statically linked (so it runs in any root).
func staticBusybox(t testing.TB) []byte {
	t.Helper()
	const bin = "/bin/busybox"
	f, err := elf.Open(bin)
	if err != nil {
		t.Skipf("no usable %s (Debian package busybox-static): %v", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Skipf("%s is dynamically linked; install Debian package busybox-static for a static one", bin)
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BusyboxLayout writes BusyboxImage(t, BusyboxOpts()) as an OCI image
// layout in a directory of t's and returns the directory.
func BusyboxLayout(t testing.TB) string {
	t.Helper()
	return WriteLayout(t, BusyboxImage(t, BusyboxOpts()))
}

// LayoutName is the org.opencontainers.image.ref.name WriteLayout and
// WriteIndexLayout give their one entry.
const LayoutName = "latest"

// WriteLayout writes img as the one image of an OCI image layout (named
// LayoutName) in a new directory of t's and returns the directory.
func WriteLayout(t testing.TB, img v1.Image) string {
	t.Helper()
	p := newLayout(t)
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": LayoutName})); err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// WriteIndexLayout writes idx (one image per platform, say) as the one
// entry of an OCI image layout (named LayoutName), as `skopeo copy --all`
// writes a multi-platform image, and returns the directory.
func WriteIndexLayout(t testing.TB, idx v1.ImageIndex) string {
	t.Helper()
	p := newLayout(t)
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": LayoutName})); err != nil {
		t.Fatal(err)
	}
	return string(p)
}

func newLayout(t testing.TB) layout.Path {
	t.Helper()
	p, err := layout.Write(filepath.Join(t.TempDir(), "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteLayoutTar writes img as WriteLayout does, tars the layout (names
// relative to it: index.json, blobs/sha256/…) into a file of t's, and
// returns the file.
func WriteLayoutTar(t testing.TB, img v1.Image) string {
	t.Helper()
	return TarDir(t, WriteLayout(t, img))
}

// TarDir tars the files and directories under dir, with names relative
// to it, into a new file of t's and returns the file.
func TarDir(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil || !fi.Mode().IsRegular() {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatalf("TarDir %s: %v", dir, err)
	}
	return out
}

// WriteDockerSave writes img tagged tag ("busybox:latest") as
// go-containerregistry's tarball writes a `docker save` archive (its
// layers gzipped, named <hex>.tar.gz) into a file of t's, and returns
// the file.
func WriteDockerSave(t testing.TB, img v1.Image, tag string) string {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "save.tar")
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		t.Fatal(err)
	}
	return out
}

// RegistryOpts says how StartRegistry's registry authenticates.
type RegistryOpts struct {
	// Username and Password, when set, put the registry behind basic
	// authentication (an htpasswd realm) with that one user.
	Username, Password string
	// Token, with Username, puts the registry behind bearer tokens
	// instead: a token server the helper runs on loopback checks the
	// user's basic credentials and grants it pull and push (anyone
	// else gets a token that grants nothing), as Docker Hub and most
	// registries do.
	Token bool
}

// Registry is a Docker distribution registry one test started, serving
// plain HTTP on loopback.
type Registry struct {
	Host               string // 127.0.0.1:<port>
	Username, Password string
	home               string // skopeo's HOME
}

// StartRegistry starts Debian's docker-registry on a free loopback port,
// storing into a directory of t's, waits until it answers /v2/, and
// stops it on t's cleanup. The registry also dies with the test binary.
// It skips t when docker-registry is not installed.
//
// With opts.Token the registry sits behind a front server on r.Host
// that answers /token itself and passes the rest on: go-containerregistry
// takes a token realm on a loopback address only when it is the
// registry's own host and port.
func StartRegistry(t testing.TB, opts RegistryOpts) *Registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skipf("docker-registry not found (Debian package docker-registry): %v", err)
	}
	dir := t.TempDir()
	r := &Registry{Username: opts.Username, Password: opts.Password, home: filepath.Join(dir, "home")}
	if err := os.Mkdir(r.home, 0o700); err != nil {
		t.Fatal(err)
	}
	var (
		auth  string
		front net.Listener
		realm *tokenRealm
	)
	switch {
	case opts.Token && opts.Username == "":
		t.Fatal("StartRegistry: a token realm needs a Username")
	case opts.Token:
		if front, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { front.Close() })
		realm = newTokenRealm(t, opts.Username, opts.Password)
		bundle := filepath.Join(dir, "token.crt")
		if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: realm.cert}), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  token:\n    realm: http://%s/token\n    service: %s\n    issuer: %s\n    rootcertbundle: %s\n",
			front.Addr(), tokenService, tokenIssuer, bundle)
	case opts.Username != "":
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, fmt.Appendf(nil, "%s:%s\n", opts.Username, hash), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: hutch-test\n    path: %s\n", htpasswd)
	}
	backend := startRegistry(t, bin, dir, auth)
	r.Host = backend
	if front != nil {
		mux := http.NewServeMux()
		mux.Handle("/token", realm)
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})
		tr := &http.Transport{} // no proxy from the environment
		proxy.Transport = tr
		mux.Handle("/", proxy)
		srv := &http.Server{Handler: mux}
		go srv.Serve(front)
		t.Cleanup(func() {
			srv.Close()
			tr.CloseIdleConnections()
		})
		r.Host = front.Addr().String()
	}
	return r
}

// startRegistry runs docker-registry with auth (a configuration
// section, or empty) until t's cleanup and returns its address.
func startRegistry(t testing.TB, bin, dir, auth string) string {
	t.Helper()
	// A port picked free may be taken before the registry binds it: try
	// another.
	for attempt := 1; ; attempt++ {
		addr := freeLoopbackAddr(t)
		cfg := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(registryConfig, filepath.Join(dir, "storage"), addr)+auth), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &Buffer{}
		cmd := exec.Command(bin, "serve", cfg)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir} // no REGISTRY_* overrides
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		done, err := osthread.StartTied(cmd)
		if err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		stop := func() {
			cmd.Process.Kill()
			<-done
		}
		err = waitRegistry(addr, done)
		if err == nil {
			t.Cleanup(stop)
			return addr
		}
		stop()
		if attempt < 3 && strings.Contains(out.String(), "address already in use") {
			continue
		}
		t.Fatalf("docker-registry on %s: %v\n%s", addr, err, out)
	}
}

// registryConfig is the registry's configuration: storage directory
// and address; an auth section may follow.
const registryConfig = `version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
`

// freeLoopbackAddr returns 127.0.0.1:<a port free a moment ago>.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitRegistry waits up to 15 seconds for host to answer /v2/ (200, or
// 401 behind authentication), or for the registry to exit.
func waitRegistry(host string, exited <-chan struct{}) error {
	client := &http.Client{Transport: &http.Transport{}, Timeout: time.Second} // no proxy
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("/v2/ answered %s", resp.Status)
		}
		select {
		case <-exited:
			return errors.New("the registry exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer in 15s: %w", err)
		}
	}
}

// Ref is the reference of repoTag ("busybox:latest") in r.
func (r *Registry) Ref(repoTag string) string { return r.Host + "/" + repoTag }

// Push copies the OCI layout at layoutDir (one image or one index) to
// r as repoTag with skopeo, as a user would. An image keeps its digest;
// an index may not: skopeo 1.9 writes it again without the fields it
// does not know (the artifactType go-containerregistry gives each
// entry), so --preserve-digests would refuse it. It skips t when skopeo
// is not installed.
func (r *Registry) Push(t testing.TB, layoutDir, repoTag string) {
	t.Helper()
	bin, err := exec.LookPath("skopeo")
	if err != nil {
		t.Skipf("skopeo not found (Debian package skopeo): %v", err)
	}
	args := []string{"--insecure-policy", "copy", "--quiet", "--all", "--dest-tls-verify=false"}
	if r.Username != "" {
		args = append(args, "--dest-creds", r.Username+":"+r.Password)
	}
	args = append(args, "oci:"+layoutDir, "docker://"+r.Ref(repoTag))
	cmd := exec.Command(bin, args...)
	// skopeo keeps auth files and caches under these.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + r.home, "XDG_RUNTIME_DIR=" + r.home, "XDG_CONFIG_HOME=" + r.home, "TMPDIR=" + r.home}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// PushImage writes img to r as repoTag with go-containerregistry, for
// tests that have an image rather than a layout.
func (r *Registry) PushImage(t testing.TB, img v1.Image, repoTag string) {
	t.Helper()
	ref, err := name.ParseReference(r.Ref(repoTag), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var auth authn.Authenticator = authn.Anonymous
	if r.Username != "" {
		auth = &authn.Basic{Username: r.Username, Password: r.Password}
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// The names a token server and its registry agree on.
const (
	tokenService = "hutch-test-registry"
	tokenIssuer  = "hutch-test-token-server"
)

// tokenRealm is a token server for one user: it checks the user's
// basic credentials and grants what they ask for; anyone without
// credentials gets a token that grants nothing. Tokens are ES256 JWTs
// carrying the realm's self-signed certificate (x5c), which the
// registry trusts as its root bundle.
type tokenRealm struct {
	user, password string
	key            *ecdsa.PrivateKey
	cert           []byte // DER
}

func newTokenRealm(t testing.TB, user, password string) *tokenRealm {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: tokenIssuer},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tokenRealm{user: user, password: password, key: key, cert: der}
}

func (tr *tokenRealm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var access []tokenAccess
	u, p, ok := r.BasicAuth()
	switch {
	case ok && (u != tr.user || p != tr.password):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"wrong username or password"}]}`)
		return
	case ok:
		for _, scope := range r.URL.Query()["scope"] {
			if f := strings.Split(scope, ":"); len(f) == 3 && f[0] == "repository" {
				access = append(access, tokenAccess{Type: "repository", Name: f[1], Actions: strings.Split(f[2], ",")})
			}
		}
	}
	tok, err := tr.sign(u, access)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": 300})
}

// tokenAccess is one grant of a token.
type tokenAccess struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// sign makes the JWT the registry checks: signed with the realm's key,
// its certificate in the header.
func (tr *tokenRealm) sign(subject string, access []tokenAccess) (string, error) {
	enc := func(v any) (string, error) {
		b, err := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b), err
	}
	header, err := enc(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(tr.cert)}})
	if err != nil {
		return "", err
	}
	now := time.Now()
	claims, err := enc(map[string]any{
		"iss": tokenIssuer, "sub": subject, "aud": tokenService,
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": fmt.Sprint(now.UnixNano()), "access": access,
	})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(header + "." + claims))
	r, s, err := ecdsa.Sign(rand.Reader, tr.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // ES256: r and s, 32 bytes each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return header + "." + claims + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
