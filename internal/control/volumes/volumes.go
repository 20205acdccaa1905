// Package volumes owns a tenant's named volumes: directories under
// <data>/volumes/<id>, made by the storage backend (a btrfs subvolume
// with a qgroup limit where the filesystem has quotas), that sandboxes
// mount and that outlive them. Deleting a volume a sandbox not yet
// destroyed mounts is refused in the store's transaction; the directory
// goes after the record.
//
// A volume's files are kept with the sandbox's own ids on disk, as a
// writable layer is: the namespace driver id-maps the directory into each
// sandbox that mounts it (internal/runtime/host/idmap). Its root is 1777, like /tmp,
// so every user of a sandbox may write in it.
package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/store"
)

// eventTimeout bounds recording an event after the work is done.
const eventTimeout = 10 * time.Second

// maxSizeMB bounds a volume's size (16 TiB).
const maxSizeMB = 16 << 20

// Service creates, lists, resolves and deletes volumes. Every call acts in
// the tenant of ctx's principal, like the store under it.
type Service struct {
	dir     string
	storage storage.Backend
	store   store.Volumes
	quotas  *quota.Service
	events  events.Appender
	log     *slog.Logger
	node    string
}

// New returns the service over dir (<data>/volumes), which it makes.
// quotas admits each new volume against its tenant's quotas (its count,
// its size among the tenant's volumes' and on the tenant's disk); events
// records volume.* events; node is this node's name, recorded with each
// volume as where its files are.
func New(dir string, backend storage.Backend, st store.Volumes, quotas *quota.Service, events events.Appender, log *slog.Logger, node string) (*Service, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	if err := fixSticky(dir); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{dir: dir, storage: backend, store: st, quotas: quotas, events: events, log: log, node: node}, nil
}

// Create makes the volume req.Name of the caller's tenant. A size the
// filesystem cannot enforce is refused unless req.SizeBestEffort.
func (s *Service) Create(ctx context.Context, req api.CreateVolumeRequest) (api.Volume, error) {
	v, err := s.create(ctx, req)
	if err != nil {
		return api.Volume{}, err
	}
	return toAPI(v), nil
}

func (s *Service) create(ctx context.Context, req api.CreateVolumeRequest) (*store.Volume, error) {
	if err := store.CheckVolumeName(req.Name); err != nil {
		return nil, err
	}
	if req.SizeMB <= 0 || req.SizeMB > maxSizeMB {
		return nil, errdefs.Invalid("invalid_volume", "size_mb must be from 1 to %d", maxSizeMB)
	}
	if _, err := s.store.GetVolume(ctx, req.Name); err == nil {
		return nil, store.VolumeExists(req.Name)
	}
	p, _ := tenancy.From(ctx)
	claim, err := s.quotas.Admit(ctx, p.TenantID, quota.Ask{Volumes: 1, VolumeMB: int64(req.SizeMB)}, nil)
	if err != nil {
		return nil, err
	}
	defer claim.Cancel()
	v := &store.Volume{ID: ids.New(), Name: req.Name, SizeMB: req.SizeMB, Node: s.node}
	dir := s.Dir(v.ID)
	if err := s.storage.Make(dir); err != nil {
		return nil, fmt.Errorf("make the volume: %w", err)
	}
	err = s.storage.SetLimit(dir, int64(req.SizeMB)<<20)
	switch {
	case err == nil:
		v.SizeEnforced = true
	case errdefs.HasCode(err, "quota_unsupported") && req.SizeBestEffort:
	default:
		s.remove(dir)
		if errdefs.HasCode(err, "quota_unsupported") {
			_, _, msg := errdefs.Classify(err)
			return nil, errdefs.Invalid("quota_unsupported", "%s; set size_best_effort to make the volume with its size recorded but not enforced", msg)
		}
		return nil, fmt.Errorf("limit the volume: %w", err)
	}
	// os.ModeSticky, not 0o1000: os.Chmod drops the raw bit.
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		s.remove(dir)
		return nil, fmt.Errorf("make the volume: %w", err)
	}
	if err := claim.Commit(ctx, nil, func() error { return s.store.CreateVolume(ctx, v) }); err != nil {
		s.remove(dir)
		return nil, err
	}
	s.emit(ctx, v, api.EventVolumeCreated, "created")
	return v, nil
}

// Get returns one of the caller's volumes.
func (s *Service) Get(ctx context.Context, name string) (api.Volume, error) {
	v, err := s.store.GetVolume(ctx, name)
	if err != nil {
		return api.Volume{}, err
	}
	return toAPI(v), nil
}

// List returns the caller's volumes by name.
func (s *Service) List(ctx context.Context) (api.VolumeList, error) {
	list, err := s.store.ListVolumes(ctx)
	if err != nil {
		return api.VolumeList{}, err
	}
	out := api.VolumeList{Volumes: make([]api.Volume, 0, len(list))}
	for i := range list {
		out.Volumes = append(out.Volumes, toAPI(&list[i]))
	}
	return out, nil
}

// toAPI is v as the API shows it.
func toAPI(v *store.Volume) api.Volume {
	return api.Volume{Name: v.Name, SizeMB: v.SizeMB, SizeEnforced: v.SizeEnforced, CreatedAt: v.CreatedAt, Node: v.Node}
}

// Delete deletes one of the caller's volumes and its files, unless a
// sandbox not yet destroyed mounts it.
func (s *Service) Delete(ctx context.Context, name string) error {
	v, err := s.store.DeleteVolume(ctx, name)
	if err != nil {
		return err
	}
	s.remove(s.Dir(v.ID))
	s.emit(ctx, v, api.EventVolumeDeleted, "deleted")
	return nil
}

// Resolve checks a sandbox's volume mounts and returns them for its
// driver: each names a volume of the caller's, at a clean absolute path,
// no two at one path.
func (s *Service) Resolve(ctx context.Context, mounts []api.VolumeMount) ([]driver.Volume, error) {
	if len(mounts) > api.MaxVolumes {
		return nil, errdefs.Invalid("invalid_volumes", "at most %d volumes per sandbox", api.MaxVolumes)
	}
	seen := map[string]bool{}
	out := make([]driver.Volume, 0, len(mounts))
	for _, m := range mounts {
		if !path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || m.Path == "/" || len(m.Path) > 4096 || strings.ContainsRune(m.Path, 0) {
			return nil, errdefs.Invalid("invalid_volume_path", "a volume's path must be a clean absolute path below /, not %q", m.Path)
		}
		if seen[m.Path] {
			return nil, errdefs.Invalid("invalid_volume_path", "two volumes at %s", m.Path)
		}
		seen[m.Path] = true
		v, err := s.store.GetVolume(ctx, m.Name)
		if errdefs.HasCode(err, "volume_not_found") {
			return nil, errdefs.Invalid("invalid_volume", "volume %q does not exist; GET /v1/volumes lists yours", m.Name)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, driver.Volume{Dir: s.Dir(v.ID), Path: m.Path, ReadOnly: m.ReadOnly})
	}
	return out, nil
}

// fixSticky gives the sticky bit to the roots of the volumes in dir that
// an earlier hutch made without it (0777, where 1777 was meant). A root
// whose mode a sandbox changed since is left as it is.
func fixSticky(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != fs.ModeDir|0o777 {
			continue
		}
		if err := os.Chmod(p, 0o777|os.ModeSticky); err != nil {
			return fmt.Errorf("volumes: %w", err)
		}
	}
	return nil
}

// Dir is where the files of volume id are.
func (s *Service) Dir(id string) string { return filepath.Join(s.dir, id) }

func (s *Service) remove(dir string) {
	if err := s.storage.Remove(dir); err != nil {
		s.log.Error("remove a volume's files", "dir", dir, "err", err)
	}
}

// emit records a volume event on a context that outlives ctx.
func (s *Service) emit(ctx context.Context, v *store.Volume, typ, what string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	defer cancel()
	e := &events.Event{TenantID: v.TenantID, Type: typ, Message: fmt.Sprintf("volume %q %s", v.Name, what), Data: map[string]any{"name": v.Name}}
	if err := s.events.AppendEvent(ctx, e); err != nil {
		s.log.Error("record event", logattr.Tenant(v.TenantID), "volume", v.Name, "event.type", typ, "err", err)
	}
}
