package image_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestRegistry pulls from a loopback registry, anonymously, an image
// skopeo pushed from a layout: the same digest, config and layers as
// the layout, and layer blobs that hash to their digests.
func TestRegistry(t *testing.T) {
	reg := testutil.StartRegistry(t, testutil.RegistryOpts{})
	img, cfg := layered(t)
	reg.Push(t, testutil.WriteLayout(t, img), "hutch/layered:1")

	src := image.Source{Ref: reg.Ref("hutch/layered:1"), Insecure: true}
	got := open(t, src)
	if got.Digest != digestOf(t, img) {
		t.Errorf("Digest = %s, want the layout's %s", got.Digest, digestOf(t, img))
	}
	if got.Ref != src.Ref {
		t.Errorf("Ref = %q", got.Ref)
	}
	if got.Config.User != cfg.User || got.Config.WorkingDir != cfg.WorkingDir || len(got.Config.Env) != len(cfg.Env) {
		t.Errorf("config = %+v, want %+v", got.Config, cfg)
	}
	checkLayers(t, got, img)

	byDigest := open(t, image.Source{Ref: reg.Ref("hutch/layered@" + got.Digest), Insecure: true})
	if byDigest.Digest != got.Digest {
		t.Errorf("by digest: %s", byDigest.Digest)
	}

	t.Run("Transport", func(t *testing.T) {
		var rt countingTransport
		withRT := src
		withRT.Transport = &rt
		img := open(t, withRT)
		checkBlob(t, img.Layers[0])
		if rt.n.Load() == 0 {
			t.Error("Open did not use the Source's Transport")
		}
	})
	t.Run("missing", func(t *testing.T) {
		for _, ref := range []string{"hutch/layered:2", "hutch/none:1"} {
			_, err := image.Open(context.Background(), image.Source{Ref: reg.Ref(ref), Insecure: true})
			wantCode(t, err, image.CodeNotFound)
			if !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("%s: not ErrNotFound: %v", ref, err)
			}
		}
	})
	t.Run("plain HTTP needs Insecure", func(t *testing.T) {
		_, err := image.Open(context.Background(), image.Source{Ref: src.Ref})
		wantCode(t, err, image.CodeUnreachable)
		if !strings.Contains(err.Error(), "insecure") {
			t.Errorf("the error does not say why: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := image.Open(ctx, src); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if rc, err := got.Layers[0].Open(ctx); err == nil {
			rc.Close()
			t.Error("Layer.Open with a cancelled context succeeded")
		}
	})
}

// TestRegistryAuth pulls from a registry behind htpasswd (basic
// authentication) and from one behind a token server (the bearer
// flow): the right credentials work, a wrong password or none is
// image_unauthorized, and a missing tag with the right ones is
// image_not_found.
func TestRegistryAuth(t *testing.T) {
	for _, realm := range []struct {
		name  string
		token bool
	}{{"basic", false}, {"token", true}} {
		t.Run(realm.name, func(t *testing.T) {
			reg := testutil.StartRegistry(t, testutil.RegistryOpts{Username: "hutch", Password: "s3cret", Token: realm.token})
			img := testutil.BusyboxImage(t, testutil.BusyboxOpts())
			reg.Push(t, testutil.WriteLayout(t, img), "hutch/busybox:1")
			reg.PushImage(t, img, "hutch/busybox:2")

			src := image.Source{Ref: reg.Ref("hutch/busybox:1"), Insecure: true, Username: "hutch", Password: "s3cret"}
			got := open(t, src)
			checkLayers(t, got, img)
			src.Ref = reg.Ref("hutch/busybox:2")
			if again := open(t, src); again.Digest != got.Digest {
				t.Errorf("skopeo pushed %s, go-containerregistry %s", got.Digest, again.Digest)
			}

			for _, tc := range []struct {
				name, user, password string
			}{
				{"wrong password", "hutch", "guess"},
				{"wrong user", "root", "s3cret"},
				{"anonymous", "", ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					bad := src
					bad.Username, bad.Password = tc.user, tc.password
					_, err := image.Open(context.Background(), bad)
					wantCode(t, err, image.CodeUnauthorized)
					if _, _, msg := errdefs.HTTPStatus(err); strings.Contains(msg+err.Error(), "s3cret") {
						t.Errorf("the error shows the password: %v", err)
					}
					if !errors.Is(err, errdefs.ErrForbidden) {
						t.Errorf("not ErrForbidden: %v", err)
					}
				})
			}
			missing := src
			missing.Ref = reg.Ref("hutch/busybox:3")
			_, err := image.Open(context.Background(), missing)
			wantCode(t, err, image.CodeNotFound)
		})
	}
}

// TestRegistryPlatforms pulls by platform from an index skopeo pushed
// with --all.
func TestRegistryPlatforms(t *testing.T) {
	reg := testutil.StartRegistry(t, testutil.RegistryOpts{})
	reg.Push(t, testutil.WriteIndexLayout(t, platformIndex(t)), "hutch/multi:1")
	checkPlatforms(t, image.Source{Ref: reg.Ref("hutch/multi:1"), Insecure: true})
}

// countingTransport counts the requests it carries.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}
