package image

import (
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Registry credentials go to the registry a reference names and nowhere
// else. go-containerregistry is never given them: it sends them to
// whatever host a registry names as its token realm, and a registry a
// caller runs names its own. As far as go-containerregistry knows, Open
// pulls anonymously; the credentials transport under it adds the Basic
// header to a request only when the request goes to the registry's own
// host and port (or, for Docker Hub, to its token service), and only when
// the request carries no authorization of its own (a bearer token the
// registry's token service issued). A redirect is a new request and is
// judged by its own host.

// Docker Hub as go-containerregistry names it, and its token service: the
// one token realm off the registry's host that credentials are sent to.
const (
	dockerHub        = name.DefaultRegistry // "index.docker.io"; "docker.io" is its alias
	dockerHubRealm   = "auth.docker.io"
	defaultHTTPSPort = ":443"
)

// RegistryHost returns the canonical name of a registry host, "host" or
// "host:port": in lower case, without HTTPS's default port, and Docker
// Hub's "docker.io" as "index.docker.io", as a reference's registry is
// named (RefRegistry). It refuses anything but a host and an optional
// port: a scheme, a path, user information, an empty port.
func RegistryHost(host string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(host), defaultHTTPSPort)
	bad := errdefs.Invalid(CodeInvalid, "%q is not a registry host: write it as host or host:port, such as ghcr.io or registry.example.com:5000", host)
	if h == "" {
		return "", bad
	}
	if strings.Contains(h, ":") && !strings.HasSuffix(h, "]") {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
			return "", bad
		}
	}
	reg, err := name.NewRegistry(h, name.StrictValidation)
	if err != nil {
		return "", bad
	}
	return reg.RegistryStr(), nil
}

// RefRegistry returns the canonical name (RegistryHost) of the registry
// ref names: "index.docker.io" for a name without a registry.
func RefRegistry(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "%q is not an image reference", ref)
	}
	return RegistryHost(r.Context().RegistryStr())
}

// credentials adds a Basic header to the requests bound for its hosts.
type credentials struct {
	next   http.RoundTripper
	hosts  []string // canonical (RegistryHost)
	header string
}

// withCredentials is next with src's credentials added for the registry
// ref names (canonical), or next itself when src has none: as
// go-containerregistry does, both a username and a password are needed.
func withCredentials(next http.RoundTripper, src Source, registry string) http.RoundTripper {
	if src.Username == "" || src.Password == "" {
		return next
	}
	hosts := []string{registry}
	if registry == dockerHub {
		hosts = append(hosts, dockerHubRealm)
	}
	return &credentials{next: next, hosts: hosts,
		header: "Basic " + base64.StdEncoding.EncodeToString([]byte(src.Username+":"+src.Password))}
}

func (c *credentials) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" || !c.bound(req.URL) {
		return c.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", c.header)
	return c.next.RoundTrip(req)
}

// bound reports whether a request to u goes to one of c's hosts: u's
// host and port, the ones the connection is made to (whatever the Host
// header says), are one of theirs, the scheme's port standing for a port
// not written.
func (c *credentials) bound(u *url.URL) bool {
	to, err := RegistryHost(u.Host)
	if err != nil {
		return false
	}
	to = withPort(to, u.Scheme)
	return slices.ContainsFunc(c.hosts, func(h string) bool { return withPort(h, u.Scheme) == to })
}

// withPort is host (canonical, RegistryHost) with scheme's default port
// when it names none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "443"
	if scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
