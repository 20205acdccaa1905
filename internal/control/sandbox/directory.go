package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// Directory answers whose a sandbox is and how many sandboxes there are,
// from their records alone, for the parts the server builds before the
// Service because the Service reports to them or calls them: the metrics
// count sandboxes through it, and the provider gateway learns whose a
// call's sandbox is. It holds no agent or driver and changes nothing; its
// callers read as the system.
type Directory struct {
	store store.Sandboxes
}

// NewDirectory returns the directory of the sandboxes st keeps.
func NewDirectory(st store.Sandboxes) *Directory {
	return &Directory{store: st}
}

// Owner is whose a sandbox is, and the state it is in.
type Owner struct {
	TenantID string
	State    api.SandboxState
}

// OwnerOf returns whose sandbox id is; one ctx may not see is 404
// sandbox_not_found.
func (d *Directory) OwnerOf(ctx context.Context, id string) (Owner, error) {
	rec, err := d.store.GetSandbox(ctx, id)
	if err != nil {
		return Owner{}, err
	}
	return Owner{TenantID: rec.TenantID, State: rec.State}, nil
}

// Count is how many sandboxes are in one state on one driver.
type Count struct {
	State  api.SandboxState
	Driver string
	N      int
}

// CountSandboxes counts every tenant's sandboxes by state and driver
// (destroyed ones included), ordered by state and driver; a pair with
// none is left out. System only.
func (d *Directory) CountSandboxes(ctx context.Context) ([]Count, error) {
	counts, err := d.store.CountSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Count, len(counts))
	for i, c := range counts {
		out[i] = Count(c)
	}
	return out, nil
}
