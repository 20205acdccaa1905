// Package templates owns the images sandboxes start from: a tenant's
// named templates, pulled from a registry or uploaded as an image archive,
// and the layer store under them, where every layer is unpacked once and
// shared by all the templates (of any tenant) that name it.
//
// A template is made whole or not at all: the layers are unpacked (each
// checked against its digests, by internal/runtime/host/oci/layer, which refuses or
// neutralises what an image must not bring) before the record is written,
// and a failed import leaves only layers the next collection removes.
// Deleting a template is refused while a sandbox not yet destroyed starts
// from it (the store checks this in the same transaction), and then
// collects every layer no template names. Imports hold the store's lock
// shared, collection exclusively, so a collection never removes a layer an
// import is about to record.
package templates

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/store"
)

// Defaults of Config's bounds.
const (
	DefaultMaxUploadBytes = 8 << 30
	DefaultMaxLayerBytes  = 16 << 30
)

// eventTimeout bounds recording an event after the work is done.
const eventTimeout = 10 * time.Second

// Store is the part of the store templates keep: their records, and the
// snapshots a template is made from.
type Store interface {
	store.Templates
	store.Snapshots
}

// RegistrySecrets opens a tenant's registry secret for the registry it is
// bound to, and refuses any other secret (secrets.Service).
type RegistrySecrets interface {
	RevealRegistry(ctx context.Context, name, registry string) ([]byte, error)
}

// Config configures the service.
type Config struct {
	// Dir is the layer store's directory (<data>/layers).
	Dir string
	// Shared keeps layers once, in overlay form with the image's own ids,
	// for a driver that id-maps them (driver.Capabilities.SharedLayers);
	// otherwise each template is flattened into a tree of its own.
	Shared bool
	// MaxUploadBytes bounds an uploaded image archive; MaxLayerBytes one
	// layer, compressed and unpacked. Zero means the defaults.
	MaxUploadBytes int64
	MaxLayerBytes  int64
	// Registries is how pulls reach registries (registry.go).
	Registries RegistryPolicy
	// Storage copies a snapshot's files into the store (FromSnapshot),
	// SnapshotDir is where snapshots are; without them templates are
	// not made from snapshots.
	Storage     storage.Backend
	SnapshotDir string
	// Disk refuses new templates while the data directory's filesystem is
	// below its reserve (internal/runtime/host/diskguard); nil checks nothing.
	Disk interface{ Check(what string) error }
	// Quotas admits each new template against its tenant's quotas (its
	// count, its bytes among the tenant's templates' and on the tenant's
	// disk); nil admits every one.
	Quotas *quota.Service
	// Node is this node's name, recorded among the nodes that hold each
	// template made or fetched here.
	Node string
	// Peers fetches a template's blobs from the node that holds them
	// when this node lacks them (fetch.go); nil fetches nothing, and a
	// template whose layers are elsewhere is 503 template_unavailable.
	Peers Peers
	// FetchTimeout bounds fetching one template from another node; zero
	// means DefaultFetchTimeout.
	FetchTimeout time.Duration
}

// Service imports, lists, resolves and deletes templates. Every call acts
// in the tenant of ctx's principal, like the store under it.
type Service struct {
	cfg     Config
	store   Store
	layers  *Layers
	secrets RegistrySecrets
	events  events.Appender
	log     *slog.Logger
	client  *http.Client

	// fetching holds one fetch per template at a time.
	fetching *keyLock
	// gc is held shared by imports (from the first layer unpacked to the
	// record written) and exclusively by collection.
	gc sync.RWMutex
}

// New opens the layer store in cfg.Dir and returns the service. events
// records template.* events.
func New(cfg Config, st Store, secrets RegistrySecrets, events events.Appender, log *slog.Logger) (*Service, error) {
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if cfg.MaxLayerBytes <= 0 {
		cfg.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	layers, err := openLayers(cfg.Dir, cfg.Shared, cfg.MaxLayerBytes)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, store: st, layers: layers, secrets: secrets, events: events, log: log,
		client: cfg.Registries.client(), fetching: newKeyLock()}, nil
}

// Pull makes the template req.Name from the image req.Ref. A password
// comes from req.PasswordSecret, which must be a registry secret bound to
// the registry req.Ref names; the image package sends it to that host
// alone.
func (s *Service) Pull(ctx context.Context, req api.CreateTemplateRequest) (api.Template, error) {
	return shown(s.pull(ctx, req))
}

func (s *Service) pull(ctx context.Context, req api.CreateTemplateRequest) (*store.Template, error) {
	if err := store.CheckTemplateName(req.Name); err != nil {
		return nil, err
	}
	if req.Ref == "" {
		return nil, errdefs.Invalid("invalid_template", "a pull needs the image's ref")
	}
	src := image.Source{Ref: req.Ref, Platform: req.Platform, Username: req.Username, Transport: s.client.Transport,
		Insecure: s.cfg.Registries.insecure(req.Ref)}
	if req.PasswordSecret != "" {
		if req.Username == "" {
			return nil, errdefs.Invalid("invalid_template", "password_secret needs a username")
		}
		// The caller names the registry: only a secret bound to it may go
		// there.
		registry, err := image.RefRegistry(req.Ref)
		if err != nil {
			return nil, err
		}
		pw, err := s.secrets.RevealRegistry(ctx, req.PasswordSecret, registry)
		if err != nil {
			return nil, err
		}
		src.Password = string(pw)
	}
	return s.make(ctx, req.Name, req.Ref, src)
}

// FromSnapshot makes the template name from the caller's snapshot: a
// copy of the snapshot's files (in overlayfs's form, with the sandbox's
// own ids, as a shared layer is) laid over the snapshot's own template,
// whose defaults it takes.
func (s *Service) FromSnapshot(ctx context.Context, name, snapshotID string) (api.Template, error) {
	return shown(s.fromSnapshot(ctx, name, snapshotID))
}

func (s *Service) fromSnapshot(ctx context.Context, name, snapshotID string) (*store.Template, error) {
	if err := store.CheckTemplateName(name); err != nil {
		return nil, err
	}
	if s.cfg.Storage == nil || s.cfg.SnapshotDir == "" {
		return nil, errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported", "this server makes no template from a snapshot")
	}
	if _, err := s.store.GetTemplate(ctx, name); err == nil {
		return nil, store.TemplateExists(name)
	}
	snap, err := s.store.GetSnapshot(ctx, snapshotID)
	if err != nil {
		return nil, err
	}
	if err := s.diskCheck(); err != nil {
		return nil, err
	}
	t := &store.Template{Name: name, Source: "snapshot " + snap.ID + " of sandbox " + snap.SandboxID, Digest: snapPrefix + snap.ID,
		Nodes: s.nodes()}
	if snap.Template == api.HostTemplate {
		t.Base = api.HostTemplate
	} else {
		base, err := s.store.GetTemplate(ctx, snap.Template)
		if err != nil {
			return nil, err
		}
		t.Config, t.Layers, t.Flat, t.Bytes = base.Config, append([]string{}, base.Layers...), base.Flat, base.Bytes
	}
	claim, err := s.admit(ctx, t.Bytes+snap.Bytes)
	if err != nil {
		return nil, err
	}
	defer claim.Cancel()
	s.gc.RLock()
	defer s.gc.RUnlock()
	id := ids.New()
	stats, err := s.cfg.Storage.Copy(ctx, filepath.Join(s.cfg.SnapshotDir, snap.ID, "fs"), filepath.Join(s.cfg.Dir, snapDir, id))
	if err != nil {
		return nil, fmt.Errorf("copy the snapshot's files: %w", err)
	}
	t.Layers = append(t.Layers, snapPrefix+id)
	t.Bytes += max(stats.Bytes, snap.Bytes)
	if err := s.commit(ctx, claim, t); err != nil {
		if rerr := s.cfg.Storage.Remove(filepath.Join(s.cfg.Dir, snapDir, id)); rerr != nil {
			s.log.Warn("remove an unrecorded layer", "err", rerr)
		}
		return nil, err
	}
	s.log.Info("template made", logattr.Tenant(t.TenantID), "template", t.Name, "snapshot", snap.ID, "base", snap.Template, "copy", stats.Method)
	s.emit(ctx, t, api.EventTemplateCreated, "created from snapshot "+snap.ID)
	return t, nil
}

// Import makes the template name from an image archive read from r: an
// OCI image layout as a tar, or what `docker save` writes.
func (s *Service) Import(ctx context.Context, name string, r io.Reader) (api.Template, error) {
	return shown(s.importArchive(ctx, name, r))
}

func (s *Service) importArchive(ctx context.Context, name string, r io.Reader) (*store.Template, error) {
	if err := store.CheckTemplateName(name); err != nil {
		return nil, err
	}
	if err := s.diskCheck(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Join(s.cfg.Dir, incomingDir), "upload-")
	if err != nil {
		return nil, fmt.Errorf("receive the image: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(r, s.cfg.MaxUploadBytes+1))
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "upload_failed", err, "receive the image archive")
	}
	if n > s.cfg.MaxUploadBytes {
		return nil, errdefs.New(errdefs.ErrTooLarge, "upload_too_large", "the image archive is over %d bytes", s.cfg.MaxUploadBytes)
	}
	return s.make(ctx, name, "upload", image.Source{Path: f.Name()})
}

// diskCheck refuses a new template below the disk reserve.
func (s *Service) diskCheck() error {
	if s.cfg.Disk == nil {
		return nil
	}
	return s.cfg.Disk.Check("a new template")
}

// make opens the image src, unpacks what the store lacks and records the
// template.
func (s *Service) make(ctx context.Context, name, source string, src image.Source) (*store.Template, error) {
	if err := s.diskCheck(); err != nil {
		return nil, err
	}
	// A name taken is refused before anything is fetched.
	if _, err := s.store.GetTemplate(ctx, name); err == nil {
		return nil, store.TemplateExists(name)
	}
	// The bytes are known once the layers are unpacked, and checked then.
	claim, err := s.admit(ctx, 0)
	if err != nil {
		return nil, err
	}
	defer claim.Cancel()
	img, err := image.Open(ctx, src)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	s.gc.RLock()
	defer s.gc.RUnlock()
	t := &store.Template{Name: name, Source: source, Digest: img.Digest, Config: api.ImageConfig{
		Env: img.Config.Env, WorkingDir: img.Config.WorkingDir, User: img.Config.User,
		Entrypoint: img.Config.Entrypoint, Cmd: img.Config.Cmd,
	}, Nodes: s.nodes()}
	start := time.Now()
	// The blobs first, as the source stored them: unpacking reads these
	// copies, and other nodes fetch them from here.
	if t.Blobs, err = s.layers.keepBlobs(ctx, img); err != nil {
		return nil, err
	}
	if s.layers.Shared() {
		for _, ly := range img.Layers {
			t.Layers = append(t.Layers, ly.DiffID)
		}
		t.Bytes, err = s.layers.unpackShared(ctx, img)
	} else {
		t.Flat, t.Bytes, err = s.layers.unpackFlat(ctx, img)
	}
	if err != nil {
		return nil, err
	}
	// The user must exist in the image: found now, not at each create.
	if _, err := resolveUser(t.Config.User, s.layers.Dirs(t.Layers, t.Flat)); err != nil {
		s.dropFlat(t)
		return nil, err
	}
	if err := s.commit(ctx, claim, t); err != nil {
		s.dropFlat(t)
		return nil, err
	}
	s.log.Info("template made", logattr.Tenant(t.TenantID), "template", t.Name, "digest", t.Digest,
		"layers", len(img.Layers), "bytes", t.Bytes, "took", time.Since(start).Round(time.Millisecond))
	s.emit(ctx, t, api.EventTemplateCreated, "created from "+source)
	return t, nil
}

// nodes are the nodes a template made here is held by: this one.
func (s *Service) nodes() []string {
	if s.cfg.Node == "" {
		return nil
	}
	return []string{s.cfg.Node}
}

// admit admits a new template of the caller's tenant, of about bytes.
func (s *Service) admit(ctx context.Context, bytes int64) (*quota.Claim, error) {
	p, _ := tenancy.From(ctx)
	return s.cfg.Quotas.Admit(ctx, p.TenantID, quota.Ask{Templates: 1, TemplateBytes: bytes}, nil)
}

// commit records t once its bytes fit its tenant's quotas.
func (s *Service) commit(ctx context.Context, claim *quota.Claim, t *store.Template) error {
	return claim.Commit(ctx, &quota.Ask{Templates: 1, TemplateBytes: t.Bytes}, func() error { return s.store.CreateTemplate(ctx, t) })
}

// dropFlat removes the flattened tree of a template that was not
// recorded; shared layers wait for the next collection.
func (s *Service) dropFlat(t *store.Template) {
	if t.Flat != "" {
		if err := s.layers.removeFlat(t.Flat); err != nil {
			s.log.Warn("remove an unrecorded image", "err", err)
		}
	}
}

// Get returns one of the caller's templates.
func (s *Service) Get(ctx context.Context, name string) (api.Template, error) {
	return shown(s.store.GetTemplate(ctx, name))
}

// List returns the caller's templates by name.
func (s *Service) List(ctx context.Context) (api.TemplateList, error) {
	// Without a principal the store would list every tenant's.
	if _, err := store.NamedScope(ctx, "templates"); err != nil {
		return api.TemplateList{}, err
	}
	list, err := s.store.ListTemplates(ctx)
	if err != nil {
		return api.TemplateList{}, err
	}
	out := api.TemplateList{Templates: make([]api.Template, 0, len(list))}
	for i := range list {
		out.Templates = append(out.Templates, toAPI(&list[i]))
	}
	return out, nil
}

// shown is t as the API shows it, or err.
func shown(t *store.Template, err error) (api.Template, error) {
	if err != nil {
		return api.Template{}, err
	}
	return toAPI(t), nil
}

// toAPI is t as the API shows it.
func toAPI(t *store.Template) api.Template {
	return api.Template{Name: t.Name, Source: t.Source, Digest: t.Digest, Config: t.Config,
		Layers: len(t.Layers), Bytes: t.Bytes, CreatedAt: t.CreatedAt, Node: home(t)}
}

// home is the node a sandbox of t must be made on: "" when any node may
// (its blobs are kept, so a node that lacks its layers fetches them:
// fetch.go), else the one node that holds it (a template made from a
// snapshot, or before blobs were kept; "" on a single box).
func home(t *store.Template) string {
	if len(t.Blobs) > 0 || len(t.Nodes) == 0 {
		return ""
	}
	return t.Nodes[0]
}

// Delete deletes one of the caller's templates, unless a sandbox not yet
// destroyed starts from it, and collects the layers nothing names now.
func (s *Service) Delete(ctx context.Context, name string) error {
	t, err := s.store.GetTemplate(ctx, name)
	if err != nil {
		return err
	}
	if err := s.store.DeleteTemplate(ctx, name); err != nil {
		return err
	}
	s.emit(ctx, t, api.EventTemplateDeleted, "deleted")
	if _, err := s.Collect(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("collect unused layers", "err", err)
	}
	return nil
}

// Collect removes every layer and flattened image no template names, and
// returns their ids.
func (s *Service) Collect(ctx context.Context) ([]string, error) {
	s.gc.Lock()
	defer s.gc.Unlock()
	all, err := s.store.ListTemplates(tenancy.System(ctx))
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, t := range all {
		for _, b := range t.Blobs {
			keep[blobPrefix+b.Digest] = true
		}
		for _, d := range t.Layers {
			keep[d] = true
		}
		if t.Flat != "" {
			keep[t.Flat] = true
		}
	}
	removed, err := s.layers.collect(keep)
	if len(removed) > 0 {
		s.log.Info("layers collected", "removed", len(removed))
	}
	return removed, err
}

// Resolve returns what the driver needs to start a sandbox from the
// caller's template name, fetching its layers from another node of the
// fleet first when this node lacks them (fetch.go).
func (s *Service) Resolve(ctx context.Context, name string) (*driver.Image, error) {
	t, err := s.store.GetTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := s.ensure(ctx, t); err != nil {
		return nil, err
	}
	dirs := s.layers.Dirs(t.Layers, t.Flat)
	img := &driver.Image{Layers: dirs, Shared: s.layers.Shared(), Host: t.Base == api.HostTemplate,
		Env: t.Config.Env, WorkingDir: t.Config.WorkingDir}
	if !img.Host {
		if img.User, err = resolveUser(t.Config.User, dirs); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// emit records a template event on a context that outlives ctx.
func (s *Service) emit(ctx context.Context, t *store.Template, typ, what string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	defer cancel()
	e := &events.Event{
		TenantID: t.TenantID,
		Type:     typ,
		Message:  fmt.Sprintf("template %q %s", t.Name, what),
		Data:     map[string]any{"name": t.Name, "digest": t.Digest},
	}
	if err := s.events.AppendEvent(ctx, e); err != nil {
		s.log.Error("record event", logattr.Tenant(t.TenantID), "template", t.Name, "event.type", typ, "err", err)
	}
}
