package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// Directory answers whose a sandbox is, from its record alone, for the
// parts the server builds before the Service because the Service calls
// them: the provider gateway learns whose a call's sandbox is. It holds
// no agent or driver and changes nothing; its callers read as the system.
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
