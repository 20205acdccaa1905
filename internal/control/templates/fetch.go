package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/store"
)

// In a fleet of nodes on one shared store a template's record is the
// fleet's, its layers the disk's of the node that made it. A node asked
// to start a sandbox of a template whose layers it lacks fetches the
// template's blobs from a node that holds them (Peers, over the
// node-to-node channel the cluster key signs), checks each against its
// digest and size, unpacks them as an import does (the diff ids checked
// again there), and records itself among the template's nodes: its next
// sandbox of it starts from its own disk.

// Defaults of Config's fetch bounds.
const (
	DefaultFetchTimeout = 10 * time.Minute
	// progressEvery is how often a fetch logs how far it is.
	progressEvery = 2 * time.Second
)

// Peers reaches the other nodes of a fleet for a template's blobs.
type Peers interface {
	// FetchBlob opens the blob digest of tenantID's template name as node
	// keeps it. A node that cannot be reached is ErrUnavailable; one that
	// keeps no such blob for that tenant's template, ErrNotFound.
	FetchBlob(ctx context.Context, node, tenantID, name, digest string) (io.ReadCloser, error)
}

// present reports whether t's layers are all in this node's store.
func (s *Service) present(t *store.Template) bool {
	for _, d := range s.layers.Dirs(t.Layers, t.Flat) {
		if _, err := os.Stat(d); err != nil {
			return false
		}
	}
	if s.layers.Shared() {
		for _, d := range t.Layers {
			if _, err := s.layers.meta(d); err != nil && !strings.HasPrefix(d, snapPrefix) {
				return false
			}
		}
	}
	return true
}

// ensure makes t's layers present on this node, fetching them from a
// node that holds them when they are not, within Config.FetchTimeout.
func (s *Service) ensure(ctx context.Context, t *store.Template) error {
	if s.present(t) {
		return nil
	}
	if err := s.fetchable(t); err != nil {
		return err
	}
	// One fetch of a template at a time on this node: a second create
	// waits for the first and finds the layers there.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FetchTimeout)
	defer cancel()
	unlock, err := s.fetching.lock(ctx, t.ID)
	if err != nil {
		return fetchTimeout(t, s.cfg.FetchTimeout, err)
	}
	defer unlock()
	if s.present(t) {
		return nil
	}
	var errs []error
	for _, node := range t.Nodes {
		if node == s.cfg.Node {
			continue
		}
		err := s.fetchFrom(ctx, node, t)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fetchTimeout(t, s.cfg.FetchTimeout, err)
		}
		s.log.Warn("template fetch failed", logattr.Tenant(t.TenantID), "template", t.Name, "from", node, "err", err)
		errs = append(errs, fmt.Errorf("node %s: %w", node, err))
	}
	if len(errs) == 0 {
		return errdefs.Unavailable("template_unavailable", "template %q's layers are on no other node this node can fetch them from", t.Name)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, "template_unavailable", errors.Join(errs...),
		"template %q's layers are not on this node, and no node that holds them (%s) could give them; try again, or create the sandbox on one of those nodes (node_labels)",
		t.Name, strings.Join(slices.DeleteFunc(slices.Clone(t.Nodes), func(n string) bool { return n == s.cfg.Node }), ", "))
}

// fetchable refuses, with the reason, a template this node cannot fetch.
func (s *Service) fetchable(t *store.Template) error {
	switch {
	case s.cfg.Peers == nil || s.cfg.Node == "":
		return errdefs.Unavailable("template_unavailable", "template %q's layers are not on this node, and it fetches from no other (no shared store or cluster key)", t.Name)
	case slices.ContainsFunc(t.Layers, func(d string) bool { return strings.HasPrefix(d, snapPrefix) }):
		return errdefs.Conflict("template_not_fetchable",
			"template %q was made from a snapshot, whose files are on node(s) %s only; create its sandboxes there (node_labels)", t.Name, strings.Join(t.Nodes, ", "))
	case len(t.Blobs) == 0:
		return errdefs.Conflict("template_not_fetchable",
			"template %q was made before nodes kept the blobs they fetch from one another; make it again to use it on every node", t.Name)
	case s.layers.Shared() != (t.Flat == ""):
		return errdefs.Conflict("template_not_fetchable",
			"template %q was unpacked for a driver that shares layers=%v, this node's %v (run every node as root, or none)", t.Name, t.Flat == "", s.layers.Shared())
	}
	for _, b := range t.Blobs {
		if checkDiffID(b.Digest) != nil || checkDiffID(b.DiffID) != nil {
			return errdefs.Conflict("template_not_fetchable", "template %q's record names a layer that is not a sha256 digest", t.Name)
		}
	}
	return nil
}

// fetchTimeout is a fetch's wait that ran out.
func fetchTimeout(t *store.Template, d time.Duration, err error) error {
	return errdefs.Wrap(errdefs.ErrUnavailable, "template_fetch_timeout", err,
		"template %q's layers were not fetched from another node within %s; try again", t.Name, d)
}

// fetchFrom fetches every blob of t this node lacks from node, then
// unpacks the template and records this node among its holders.
func (s *Service) fetchFrom(ctx context.Context, node string, t *store.Template) error {
	start := time.Now()
	var total int64
	for _, b := range t.Blobs {
		total += b.Size
	}
	s.log.Info("template fetch started", logattr.Tenant(t.TenantID), "template", t.Name, "from", node,
		"layers", len(t.Blobs), "bytes", total)
	p := &progress{s: s, t: t, node: node, total: total, last: start}
	// Held from the first blob to the last layer unpacked, as an import
	// holds it: a collection waits, and removes nothing half-fetched.
	s.gc.RLock()
	defer s.gc.RUnlock()
	for _, b := range t.Blobs {
		if s.layers.hasBlob(b.Digest) {
			p.done += b.Size
			continue
		}
		if err := s.fetchBlob(ctx, node, t, b, p); err != nil {
			return err
		}
		p.done += b.Size
	}
	if err := s.unpackFetched(ctx, t); err != nil {
		return err
	}
	if err := s.store.AddTemplateNode(ctx, t.Name, s.cfg.Node); err != nil {
		return err
	}
	s.log.Info("template fetched", logattr.Tenant(t.TenantID), "template", t.Name, "from", node,
		"bytes", total, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// fetchBlob fetches the blob b of t from node into the store, checked.
func (s *Service) fetchBlob(ctx context.Context, node string, t *store.Template, b store.TemplateBlob, p *progress) error {
	rc, err := s.cfg.Peers.FetchBlob(ctx, node, t.TenantID, t.Name, b.Digest)
	if err != nil {
		return err
	}
	defer rc.Close()
	// A read that waits on a node gone quiet ends with ctx.
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	base := p.done
	return s.layers.keepBlob(b.Digest, b.Size, rc, func(n int64) { p.at(base + n) })
}

// unpackFetched unpacks t's fetched blobs as an import would, where
// they are not unpacked yet: shared layers by diff id, or t's flattened
// tree under t's own flat id. The caller holds s.gc shared.
func (s *Service) unpackFetched(ctx context.Context, t *store.Template) error {
	if err := s.diskCheck(); err != nil {
		return err
	}
	img := s.layers.blobImage(t)
	if s.layers.Shared() {
		_, err := s.layers.unpackShared(ctx, img)
		return err
	}
	_, _, err := s.layers.unpackFlatAs(ctx, img, t.Flat)
	return err
}

// progress logs a fetch's bytes at most every progressEvery.
type progress struct {
	s           *Service
	t           *store.Template
	node        string
	total, done int64
	last        time.Time
}

func (p *progress) at(n int64) {
	if time.Since(p.last) < progressEvery {
		return
	}
	p.last = time.Now()
	p.s.log.Info("template fetch progress", logattr.Tenant(p.t.TenantID), "template", p.t.Name, "from", p.node,
		"bytes", n, "of", p.total)
}

// OpenBlob opens the blob digest of the caller's template name as this
// node keeps it, for another node fetching the template: only a blob the
// tenant's own template names, so no tenant reaches another's.
func (s *Service) OpenBlob(ctx context.Context, name, digest string) (io.ReadCloser, int64, error) {
	if _, err := store.NamedScope(ctx, "templates"); err != nil {
		return nil, 0, err
	}
	t, err := s.store.GetTemplate(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	i := slices.IndexFunc(t.Blobs, func(b store.TemplateBlob) bool { return b.Digest == digest })
	if i < 0 {
		return nil, 0, errdefs.NotFound("blob_not_here", "template %q has no layer %s", name, digest)
	}
	f, err := s.layers.openBlob(digest)
	if err != nil {
		return nil, 0, err
	}
	return f, t.Blobs[i].Size, nil
}
