package peer_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/edge/peer"
)

const digest = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"

// oneBlob keeps one blob, of tenant t1's template bb.
type oneBlob struct{}

func (oneBlob) OpenBlob(ctx context.Context, name, d string) (io.ReadCloser, int64, error) {
	p, _ := tenancy.From(ctx)
	if p.TenantID != "t1" || name != "bb" {
		return nil, 0, errdefs.NotFound("template_not_found", "template %q not found", name)
	}
	if d != digest {
		return nil, 0, errdefs.NotFound("blob_not_here", "no layer %s", d)
	}
	return io.NopCloser(strings.NewReader("layer bytes")), int64(len("layer bytes")), nil
}

// urls is where the test's nodes are.
type urls map[string]string

func (u urls) URL(_ context.Context, node string) (*url.URL, error) {
	s, ok := u[node]
	if !ok {
		return nil, errdefs.Unavailable("node_unavailable", "no node %s", node)
	}
	return url.Parse(s)
}

// TestMount: node a serves its blob to node b's signed call, in the
// tenant the call names only; every other request to the same paths, an
// unsigned one or one node b forwarded for a client, goes on to the
// handler behind, as it did before.
func TestMount(t *testing.T) {
	key := []byte(strings.Repeat("k", 64))
	nodes := urls{}
	fa := forward.New(forward.Config{Node: "a", Key: key, Nodes: nodes})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "next") })
	a := httptest.NewServer(fa.Accept(peer.Mount(next, oneBlob{}, nil)))
	defer a.Close()
	nodes["a"] = a.URL
	fb := forward.New(forward.Config{Node: "b", Key: key, Nodes: nodes})
	defer fb.Close()
	c := peer.Client{Forward: fb}
	ctx := context.Background()

	rc, err := c.FetchBlob(ctx, "a", "t1", "bb", digest)
	if err != nil {
		t.Fatalf("FetchBlob: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "layer bytes" {
		t.Errorf("blob = %q", b)
	}
	_, err = c.FetchBlob(ctx, "a", "t2", "bb", digest)
	if !errors.Is(err, errdefs.ErrNotFound) || !errdefs.HasCode(err, "template_not_found") {
		t.Errorf("another tenant's call: %v; want 404 template_not_found", err)
	}
	if _, err := c.FetchBlob(ctx, "z", "t1", "bb", digest); !errdefs.HasCode(err, "node_unavailable") {
		t.Errorf("a node that is not there: %v; want node_unavailable", err)
	}

	path := "/internal/v1/tenants/t1/templates/bb/blobs/" + strings.TrimPrefix(digest, "sha256:")
	get := func(base string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(a.URL); got != "next" {
		t.Errorf("an unsigned request: %q; want the handler behind", got)
	}
	// Node b forwards a client's request (a preview's, key id "") to a.
	b2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fb.Forward(w, r, "a", "") }))
	defer b2.Close()
	if got := get(b2.URL); got != "next" {
		t.Errorf("a client's request forwarded by b: %q; want the handler behind", got)
	}
}
