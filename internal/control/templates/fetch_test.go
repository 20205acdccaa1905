package templates_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// peerNodes reaches other template services of the test in process, as
// internal/edge/peer reaches other nodes' over HTTP (that path is
// TestFleetTemplate* in internal/server): each call opens the holder's
// blob in the tenant asked for, through change (nil: as it is).
type peerNodes struct {
	nodes  map[string]*templates.Service
	calls  atomic.Int32
	change func(io.ReadCloser) io.ReadCloser
}

func (p *peerNodes) FetchBlob(ctx context.Context, node, tenantID, name, digest string) (io.ReadCloser, error) {
	p.calls.Add(1)
	svc, ok := p.nodes[node]
	if !ok {
		return nil, errdefs.Unavailable("node_unavailable", "node %s cannot be reached", node)
	}
	rc, _, err := svc.OpenBlob(tenancy.With(ctx, tenancy.Principal{TenantID: tenantID, Role: api.RoleReader}), name, digest)
	if err != nil || p.change == nil {
		return rc, err
	}
	return p.change(rc), nil
}

// nodes is two template services, a and b, on one store st, b fetching
// through peers; ctx is the tenant's, dirB b's layer store.
type nodes struct {
	a, b *templates.Service
	st   store.Store
	ctx  context.Context
	dirB string
	logB *bytes.Buffer // b's log, JSON
}

func twoNodes(t *testing.T, peers *peerNodes, timeout time.Duration) nodes {
	t.Helper()
	st, ctx := memberStore(t)
	ev := events.New(st, events.Config{})
	n := nodes{st: st, ctx: ctx, logB: &bytes.Buffer{}}
	open := func(node string, peers templates.Peers, log *slog.Logger) (*templates.Service, string) {
		dir := filepath.Join(t.TempDir(), "layers")
		svc, err := templates.New(templates.Config{Dir: dir, Node: node, Peers: peers, FetchTimeout: timeout}, st, nil, ev, log)
		if err != nil {
			t.Fatal(err)
		}
		return svc, dir
	}
	n.a, _ = open("a", nil, nil)
	n.b, n.dirB = open("b", peers, slog.New(slog.NewJSONHandler(n.logB, nil)))
	peers.nodes = map[string]*templates.Service{"a": n.a}
	return n
}

// importOn imports a busybox image as bb on svc.
func importOn(t *testing.T, svc *templates.Service, ctx context.Context) {
	t.Helper()
	if _, err := importFile(t, svc, ctx, "bb", testutil.WriteDockerSave(t, testutil.BusyboxImage(t, testutil.BusyboxOpts()), "bb:1")); err != nil {
		t.Fatalf("Import: %v", err)
	}
}

// kept lists what a layer store holds under sub, but what is in flight.
func kept(t *testing.T, dir, sub string) []string {
	t.Helper()
	return testutil.Entries(t, filepath.Join(dir, sub))
}

// TestFetchOnce: creates of a template another node holds, at once on
// this node, fetch each blob once; the template then resolves here and
// names both nodes.
func TestFetchOnce(t *testing.T) {
	peers := &peerNodes{}
	n := twoNodes(t, peers, time.Minute)
	b, ctx := n.b, n.ctx
	importOn(t, n.a, ctx)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			img, err := b.Resolve(ctx, "bb")
			if err == nil && len(img.Layers) != 1 {
				err = errors.New("not one flattened tree")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Resolve on b: %v", err)
		}
	}
	if n := peers.calls.Load(); n != 1 {
		t.Errorf("%d blob fetches for a one-layer image resolved 4 times at once; want 1", n)
	}
	if got := kept(t, n.dirB, "blobs"); len(got) != 1 {
		t.Errorf("b keeps blobs %q; want one", got)
	}
	if tm, err := n.st.GetTemplate(ctx, "bb"); err != nil || !slices.Equal(tm.Nodes, []string{"a", "b"}) {
		t.Errorf("the template's nodes: %+v, %v; want a and b", tm, err)
	}
	for _, msg := range []string{`"msg":"template fetch started","tenant.id"`, `"msg":"template fetched","tenant.id"`} {
		if strings.Count(n.logB.String(), msg) != 1 {
			t.Errorf("b's log has not once %s:\n%s", msg, n.logB)
		}
	}
}

// TestFetchChecksDigest: a blob whose bytes are not its digest's is
// refused, and nothing of it is kept.
func TestFetchChecksDigest(t *testing.T) {
	peers := &peerNodes{change: func(rc io.ReadCloser) io.ReadCloser { return flipped{rc} }}
	n := twoNodes(t, peers, time.Minute)
	importOn(t, n.a, n.ctx)
	_, err := n.b.Resolve(n.ctx, "bb")
	if !errdefs.HasCode(err, "template_unavailable") || !strings.Contains(err.Error(), "hash to") {
		t.Fatalf("Resolve of a corrupted fetch: %v; want template_unavailable for the digest", err)
	}
	if got := kept(t, n.dirB, "blobs"); len(got) != 0 {
		t.Errorf("b keeps blobs %q of a corrupted fetch", got)
	}
	if got := kept(t, n.dirB, "flat"); len(got) != 0 {
		t.Errorf("b unpacked %q from a corrupted fetch", got)
	}
}

// TestFetchTimeout: a holder that sends nothing is given up within the
// fetch timeout, 503 template_fetch_timeout.
func TestFetchTimeout(t *testing.T) {
	peers := &peerNodes{change: func(rc io.ReadCloser) io.ReadCloser { rc.Close(); return &stalled{closed: make(chan struct{})} }}
	n := twoNodes(t, peers, 300*time.Millisecond)
	importOn(t, n.a, n.ctx)
	start := time.Now()
	_, err := n.b.Resolve(n.ctx, "bb")
	if !errdefs.HasCode(err, "template_fetch_timeout") || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("Resolve from a stalled holder: %v; want template_fetch_timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// TestFetchNotFetchable: a template whose record names no blobs (made
// before they were kept) is refused with the reason, without a call.
func TestFetchNotFetchable(t *testing.T) {
	peers := &peerNodes{}
	n := twoNodes(t, peers, time.Minute)
	if err := n.st.CreateTemplate(n.ctx, &store.Template{Name: "old", Source: "upload", Digest: "sha256:" + strings.Repeat("a", 64),
		Flat: "01JAAAAAAAAAAAAAAAAAAAAAAA", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	_, err := n.b.Resolve(n.ctx, "old")
	if !errdefs.HasCode(err, "template_not_fetchable") || peers.calls.Load() != 0 {
		t.Fatalf("Resolve of a template without blobs: %v (%d calls); want template_not_fetchable", err, peers.calls.Load())
	}
}

// flipped changes the first byte it reads.
type flipped struct{ io.ReadCloser }

func (f flipped) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 {
		p[0] ^= 0xff
	}
	return n, err
}

// stalled gives no byte until it is closed, as a connection to a node
// that stopped sending.
type stalled struct {
	once   sync.Once
	closed chan struct{}
}

func (s *stalled) Read([]byte) (int, error) {
	<-s.closed
	return 0, errors.New("closed")
}

func (s *stalled) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}
