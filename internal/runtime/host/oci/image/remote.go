package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// openRemote opens the image src.Ref names in its registry.
func openRemote(ctx context.Context, src Source, want v1.Platform) (*Image, error) {
	var opts []name.Option
	if src.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(src.Ref, opts...)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "%q is not an image reference", src.Ref)
	}
	registry, err := RegistryHost(ref.Context().RegistryStr())
	if err != nil {
		return nil, err
	}
	base := src.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	// The credentials are added under go-containerregistry, for the
	// registry's host alone (credentials.go).
	p, err := remote.NewPuller(
		remote.WithAuth(authn.Anonymous),
		remote.WithTransport(&guard{next: withCredentials(base, src, registry), insecure: src.Insecure}),
	)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	st := &remoteStore{p: p, repo: ref.Context(), ref: src.Ref}
	d, err := p.Get(ctx, ref)
	if err != nil {
		return nil, st.fail(err)
	}
	if int64(len(d.Manifest)) > MaxManifestBytes {
		return nil, errdefs.Invalid(CodeInvalid, "the image's manifest is %d bytes, more than the %d hutch takes", len(d.Manifest), MaxManifestBytes)
	}
	img, err := resolve(ctx, st, d.Descriptor, d.Manifest, want)
	if err != nil {
		return nil, err
	}
	img.Ref = src.Ref
	return img, nil
}

// remoteStore reads one repository of a registry. Blobs are fetched by
// digest from the registry only: a descriptor's URLs are never followed.
type remoteStore struct {
	p    *remote.Puller // keeps the repository's authorised transport
	repo name.Repository
	ref  string // as the user wrote it, for messages
}

func (s *remoteStore) manifest(ctx context.Context, d v1.Descriptor, limit int64) ([]byte, error) {
	got, err := s.p.Get(ctx, s.repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, s.fail(err)
	}
	if int64(len(got.Manifest)) > limit {
		return nil, errdefs.Invalid(CodeInvalid, "the image's manifest %s is more than %d bytes", d.Digest, limit)
	}
	return got.Manifest, nil
}

func (s *remoteStore) blob(ctx context.Context, d v1.Descriptor, limit int64) ([]byte, error) {
	rc, err := s.open(ctx, d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := readAtMost(rc, limit)
	if errors.Is(err, errTooBig) {
		return nil, errdefs.Invalid(CodeInvalid, "the blob %s is more than %d bytes", d.Digest, limit)
	}
	if err != nil {
		return nil, s.fail(err)
	}
	return b, nil
}

func (s *remoteStore) open(ctx context.Context, d v1.Descriptor) (io.ReadCloser, error) {
	l, err := s.p.Layer(ctx, s.repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, s.fail(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, s.fail(err)
	}
	return rc, nil
}

func (s *remoteStore) has(ctx context.Context, d v1.Descriptor) (bool, error) {
	l, err := s.p.Layer(ctx, s.repo.Digest(d.Digest.String()))
	if err != nil {
		return false, s.fail(err)
	}
	if _, err := l.Size(); err != nil { // a HEAD of the blob
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, s.fail(err)
	}
	return true, nil
}

// fail classifies an error of the registry or of the way to it.
func (s *remoteStore) fail(err error) error {
	reg := s.repo.RegistryStr()
	var te *transport.Error
	switch {
	case errors.As(err, &te):
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return errdefs.Wrap(errdefs.ErrForbidden, CodeUnauthorized, err,
				"the registry %s refused access to %s (answer %d): check the username and password, and that the image exists", reg, s.ref, te.StatusCode)
		case http.StatusNotFound:
			return errdefs.Wrap(errdefs.ErrNotFound, CodeNotFound, err, "the registry %s has no image %s", reg, s.ref)
		}
		return errdefs.Wrap(errdefs.ErrUnavailable, CodeUnreachable, err, "the registry %s answered %d for %s", reg, te.StatusCode, s.ref)
	case errors.Is(err, errManifestTooBig):
		return errdefs.Wrap(errdefs.ErrInvalid, CodeInvalid, err, "the registry %s sent a manifest for %s larger than the %d bytes hutch takes", reg, s.ref, MaxManifestBytes)
	case errors.Is(err, errPlainHTTP):
		return errdefs.Wrap(errdefs.ErrUnavailable, CodeUnreachable, err,
			"the registry %s does not answer over HTTPS; plain HTTP needs the source marked insecure (meant for a loopback registry)", reg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errdefs.Wrap(errdefs.ErrUnavailable, CodeUnreachable, err, "pulling %s from %s was cancelled or timed out", s.ref, reg)
	}
	// The network's own words say why (refused, no route, a private
	// address hutch will not dial).
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, CodeUnreachable, err, "the registry %s cannot be reached: %v", reg, op.Err)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, CodeUnreachable, err, "the registry %s cannot be reached", reg)
}

var (
	errPlainHTTP      = errors.New("image: plain HTTP refused: the source is not insecure")
	errManifestTooBig = fmt.Errorf("image: the registry's manifest answer is more than %d bytes", MaxManifestBytes)
)

// guard is the transport under go-containerregistry's: it refuses plain
// HTTP unless the source allows it (go-containerregistry falls back to
// it by itself for loopback, .local and private addresses), and caps a
// manifest answer at MaxManifestBytes (go-containerregistry reads up to
// 100 MiB).
type guard struct {
	next     http.RoundTripper
	insecure bool
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !g.insecure {
		return nil, errPlainHTTP
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > MaxManifestBytes {
		resp.Body.Close()
		return nil, errManifestTooBig
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxManifestBytes}
	return resp, nil
}

// cappedBody fails a body that goes on past its cap.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errManifestTooBig
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errManifestTooBig
	}
	return n, err
}
