// Package image opens an OCI or Docker container image, wherever it is
// kept, as one shape: its manifest digest, its config (what a sandbox runs
// and how), and its layers, bottom first, each a blob to open. It owns the
// step between "an image reference or archive a user named" and the bytes
// internal/runtime/host/oci/layer unpacks; it knows nothing of sandboxes or stores.
//
// Sources: a registry reference (pulled over HTTPS with go-containerregistry,
// anonymously, with basic credentials, or through the token flow the
// registry asks for; credentials go to the reference's registry host and
// port alone, never to a token realm or a redirect elsewhere:
// credentials.go), an OCI image layout directory, a tar of one, or a
// `docker save` tar. Archives are read in place: Open indexes the tar's
// entries once and reads each blob from its offset; nothing is extracted,
// so nothing is written to disk.
//
// Everything read is untrusted. Manifests, indexes and configs are
// checked against their digests and sizes before they are parsed, and are
// bounded (MaxManifestBytes, MaxConfigBytes); an image has at most
// MaxLayers layers; a tar entry named with ".." or an absolute name, or a
// link out of the archive, refuses the whole archive. Layer blobs are
// handed over as stored: the caller decompresses them and checks
// Layer.Digest and Layer.DiffID (internal/runtime/host/oci/layer.Unpack does both).
// Foreign (non-distributable) layers are taken only when their blob is in
// the source: Open never follows a descriptor's URLs.
//
// Errors are errdefs errors with the codes below; a registry's answer
// keeps its detail in the cause, never in the message.
package image

import (
	"context"
	"io"
	"net/http"
	"runtime"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The codes of Open's errors, and their classes. A registry refusing
// credentials is ErrForbidden, not ErrUnauthorized: hutch's own caller
// did authenticate, and a 401 would tell its client to log in again.
const (
	CodeInvalid      = "image_invalid"      // a malformed source, or not a container image; ErrInvalid
	CodeNotFound     = "image_not_found"    // no such image, tag, path or name; ErrNotFound
	CodePlatform     = "image_platform"     // no manifest for the platform asked for; ErrNotFound
	CodeUnauthorized = "image_unauthorized" // the registry refused the credentials (401, 403); ErrForbidden
	CodeUnreachable  = "image_unreachable"  // the registry did not answer, or answered an error; ErrUnavailable
)

// The bounds Open holds an image to.
const (
	MaxLayers        = 128     // layers in one image
	MaxConfigBytes   = 1 << 20 // the config blob
	MaxManifestBytes = 4 << 20 // a manifest or index; the distribution spec's own limit
)

// Source says where an image comes from: exactly one of Ref and Path.
type Source struct {
	// Ref is a registry reference: "127.0.0.1:5000/debian:bookworm",
	// "docker.io/library/busybox@sha256:…"; a name without a registry is
	// Docker Hub's, without a tag "latest".
	Ref string
	// Path is an OCI image layout directory, a tar of one, or a tar
	// `docker save` wrote, told apart by what they hold (index.json, or
	// only manifest.json). A compressed tar is refused.
	Path string
	// Name picks one image of a Path holding several: the layout image
	// annotated org.opencontainers.image.ref.name (or
	// io.containerd.image.name) Name, or the `docker save` image tagged
	// Name. Empty, Path must hold one image (or one index).
	Name string

	// Username and Password are a registry's basic credentials; without
	// both the pull is anonymous. They are sent only to the host and port
	// of the registry Ref names: there they are exchanged for a token
	// when the registry answers with a token realm on its own host (or
	// Docker Hub's, auth.docker.io); a realm or a redirect on any other
	// host is never sent them.
	Username, Password string
	// Insecure lets Open fall back to plain HTTP when the registry does
	// not speak HTTPS. It is meant for a registry on loopback, as tests
	// run one: anywhere else the image and the credentials cross the
	// network in clear and can be changed on the way. Without it Open
	// never sends a request over plain HTTP, not even to the private and
	// loopback addresses go-containerregistry would otherwise try it for.
	Insecure bool
	// Transport carries the registry requests: the server's, with the
	// dial policy it keeps. Nil is go-containerregistry's default, which
	// honours HTTPS_PROXY. Open layers its own rules over it (no plain
	// HTTP unless Insecure, a cap on manifests) and its authentication.
	Transport http.RoundTripper

	// Platform is "os/arch[/variant]", such as "linux/amd64" or
	// "linux/arm64/v8"; empty is the platform hutch runs on. From an
	// index, Open picks the manifest for it; an image whose config names
	// another platform is refused (CodePlatform).
	Platform string
}

// Image is an opened image. Close it once its layers are read.
//
// Lifecycle: Open reads the manifest and config and checks them; the
// layers' blobs are read only through Layer.Open, which may be called
// any number of times, concurrently, until Close. For a Path, the Image
// holds the directory or the tar file open (so a file renamed over it
// later does not change what is read); a layer reader opened before
// Close stays readable until it is closed itself. For a Ref, Close
// releases nothing and Layer.Open pulls the blob from the registry.
type Image struct {
	// Digest is the manifest's digest, "sha256:<hex>". A `docker save`
	// tar has no manifest: its Digest is that of the OCI manifest Open
	// derives from it (its config and its layers as stored), stable for
	// the same tar.
	Digest string
	// Ref says what it was opened from, for messages and records: the
	// Source's Ref, or its Path followed by ":"+Name when Name is set.
	Ref    string
	Config Config
	// Layers are bottom first.
	Layers []Layer

	close func() error
}

// Config is what the image's config says about running it.
type Config struct {
	Env        []string // "KEY=value"
	WorkingDir string
	User       string // "", "name", "uid", "uid:gid", "name:group"…, as written
	Entrypoint []string
	Cmd        []string
	// Architecture and OS are the config's, such as "amd64" and "linux";
	// either may be empty in images that do not say.
	Architecture string
	OS           string
}

// Layer is one layer of an image.
type Layer struct {
	Digest    string // "sha256:<hex>" of the blob as stored (compressed)
	DiffID    string // "sha256:<hex>" of the uncompressed tar
	Size      int64  // the blob's size as stored
	MediaType string // application/vnd.oci.image.layer.v1.tar+gzip, …
	// Open returns the layer's blob as stored: compressed as MediaType
	// says, and not checked against Digest or DiffID; the caller
	// decompresses and checks both. The reader fails rather than read
	// past Size.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Close releases what the image holds open. It is safe to call more
// than once; Layer.Open fails after it.
func (img *Image) Close() error {
	if img.close == nil {
		return nil
	}
	c := img.close
	img.close = nil
	return c()
}

// Open opens the image src names: it reads and checks its manifest (for
// src's platform) and config, and lists its layers. The caller closes
// the Image.
func Open(ctx context.Context, src Source) (*Image, error) {
	want, err := platform(src.Platform)
	if err != nil {
		return nil, err
	}
	switch {
	case src.Ref != "" && src.Path != "":
		return nil, errdefs.Invalid(CodeInvalid, "an image source is a registry reference or a path, not both")
	case src.Ref != "":
		if src.Name != "" {
			return nil, errdefs.Invalid(CodeInvalid, "an image name picks an image within a path; a reference names one already")
		}
		return openRemote(ctx, src, want)
	case src.Path != "":
		return openPath(ctx, src, want)
	}
	return nil, errdefs.Invalid(CodeInvalid, "an image source needs a registry reference or a path")
}

// hostPlatform is the platform hutch runs on, the default one.
func hostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }
