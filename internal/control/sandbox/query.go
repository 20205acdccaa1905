package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Get returns one sandbox of the caller's tenant.
func (s *Service) Get(ctx context.Context, id string) (api.Sandbox, error) {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	sb := s.toAPI(rec)
	sb.Disk = s.DiskUsage(ctx, rec)
	return sb, nil
}

// Check returns nil when sandbox id is one of the caller's tenant's, in
// any state (a destroyed one keeps its record), else 404
// sandbox_not_found: for the calls that name a sandbox and need nothing
// else of it.
func (s *Service) Check(ctx context.Context, id string) error {
	_, err := s.store.GetSandbox(ctx, id)
	return err
}

// ListOptions filter and page List.
type ListOptions struct {
	State  api.SandboxState  // only this state, if set
	Labels map[string]string // only sandboxes carrying every one of these
	Limit  int               // page size: 100 if <= 0, at most MaxPage
	Cursor string            // from the previous page (api.SandboxList.NextCursor)
}

// MaxPage is the most sandboxes one page of List holds.
const MaxPage = store.MaxLimit

// List returns a page of the caller's sandboxes, newest first.
func (s *Service) List(ctx context.Context, opts ListOptions) (api.SandboxList, error) {
	recs, next, err := s.store.ListSandboxes(ctx, store.ListOptions(opts))
	if err != nil {
		return api.SandboxList{}, err
	}
	out := api.SandboxList{Sandboxes: make([]api.Sandbox, 0, len(recs)), NextCursor: next}
	for _, r := range recs {
		out.Sandboxes = append(out.Sandboxes, s.toAPI(r))
	}
	return out, nil
}

// toAPI shows a record: its driver's isolation and unenforced limits, and
// the state unavailable, where a live sandbox's driver is not loaded here.
func (s *Service) toAPI(r *store.Sandbox) api.Sandbox {
	sb := api.Sandbox{
		ID:        r.ID,
		State:     r.State,
		Template:  r.Template,
		Driver:    r.Driver,
		Cwd:       r.Cwd,
		Limits:    r.Limits,
		TimeoutS:  r.TimeoutS,
		Labels:    r.Labels,
		Root:      r.Root,
		Network:   r.Network,
		Volumes:   r.Volumes,
		OnExpiry:  cmp.Or(r.OnExpiry, api.OnExpiryDestroy),
		Error:     r.Error,
		Node:      r.Node,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
		ExpiresAt: r.ExpiresAt,
		PausedAt:  r.PausedAt,

		IdleTimeoutS:   r.IdleTimeoutS,
		KeepaliveUntil: r.KeepaliveUntil,
	}
	if d, ok := s.drivers.Get(r.Driver); ok {
		c := d.Capabilities()
		sb.Isolation, sb.Degraded = c.Isolation, c.Degraded
		sb.UnenforcedLimits = unenforcedLimits(r.Limits, limitCaps(d))
	} else if r.State != api.StateDestroyed && r.State != api.StateFailed {
		sb.State = api.StateUnavailable
		if sb.Error == "" {
			sb.Error = fmt.Sprintf("its %s driver is not loaded on this server", r.Driver)
		}
	}
	if h, err := s.seals.decodeHandle(r); err == nil && h.Workdir != "" {
		sb.Cwd = h.Workdir
	}
	return sb
}

func encodeHandle(h driver.Handle) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode handle: %w", err)
	}
	return b, nil
}

func decodeHandle(raw []byte) (driver.Handle, error) {
	var h driver.Handle
	if len(raw) == 0 {
		return h, errdefs.Conflict("sandbox_not_running", "sandbox has no driver handle")
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("decode handle: %w", err)
	}
	return h, nil
}
