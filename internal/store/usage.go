package store

import (
	"context"
	"math"

	"github.com/hutchdev/hutch/api"
)

// Usage counts what each tenant, and each node's sandboxes, hold: what
// admission reads before every create. A store keeps the sandboxes' part
// as counters it changes in the same write as the sandbox record, so a
// read costs the same however many sandboxes there are; the rest of a
// tenant's (snapshots, volumes, templates, apps, keys, secrets) it counts
// by the tenant's index, bounded by the tenant's own quotas.
type Usage interface {
	// TenantUsage is what tenant id holds now. The tenant's own
	// principals, admins and the system may read it (another tenant's is
	// tenant_not_found).
	TenantUsage(ctx context.Context, id string) (TenantUsage, error)
	// NodeUsage is what the sandboxes of node hold, with those recorded
	// before nodes (node ""). System only: admission against the node's
	// capacity.
	NodeUsage(ctx context.Context, node string) (NodeUsage, error)
	// SetSandboxDisk records what sandbox id's files take, as measured.
	// System only: the disk policy and the service's measurements. It
	// changes nothing else of the record (not its UpdatedAt).
	SetSandboxDisk(ctx context.Context, id string, bytes int64) error
}

// TenantUsage is what a tenant holds. The sandboxes' part is counted as
// SandboxShare says.
type TenantUsage struct {
	Sandboxes int // placed: neither destroyed nor failed
	// MemoryMB, CPUMilli and Pids add up the limits of its sandboxes
	// that hold them; CPU is in thousandths of a core.
	MemoryMB, CPUMilli, Pids int
	// SandboxDiskBytes adds up what its sandboxes' files took when last
	// measured (Sandbox.DiskBytes), of those not destroyed.
	SandboxDiskBytes int64
	Snapshots        int
	SnapshotBytes    int64
	Volumes          int
	VolumeMB         int64 // the volumes' sizes
	Templates        int
	TemplateBytes    int64
	Apps             int
	Keys             int
	Secrets          int
}

// DiskBytes is everything of the tenant's on disk: its sandboxes' files,
// snapshots, volumes (their sizes) and templates.
func (u TenantUsage) DiskBytes() int64 {
	return u.SandboxDiskBytes + u.SnapshotBytes + u.VolumeMB<<20 + u.TemplateBytes
}

// NodeUsage is what a node's sandboxes hold: the limits of those that
// hold them.
type NodeUsage struct {
	MemoryMB, CPUMilli, Pids int
}

// SandboxShare is what one sandbox record adds to its tenant's usage (all
// of it) and its node's (its limits): a placed one counts as a sandbox,
// one that holds its limits adds them (a paused one its memory and pids
// only: frozen, it runs on no CPU), and one not destroyed adds its files'
// bytes.
type SandboxShare struct {
	Placed                   int // 1 or 0
	MemoryMB, CPUMilli, Pids int
	DiskBytes                int64
}

// MoveShare moves a record's share from what it was to what it is
// through add, which adds sign × sh to a tenant's and a node's counters:
// nothing when neither the share nor the node changed.
func MoveShare(before, after *Sandbox, add func(tenant, node string, sh SandboxShare, sign int) error) error {
	b, a := ShareOf(before), ShareOf(after)
	if b == a && before.Node == after.Node {
		return nil
	}
	if err := add(before.TenantID, before.Node, b, -1); err != nil {
		return err
	}
	return add(after.TenantID, after.Node, a, 1)
}

// ShareOf is sb's share.
func ShareOf(sb *Sandbox) SandboxShare {
	var sh SandboxShare
	if Placed(sb.State) {
		sh.Placed = 1
	}
	if Holding(sb.State) {
		sh.MemoryMB, sh.Pids = sb.Limits.MemoryMB, sb.Limits.Pids
		if sb.State != api.StatePaused {
			sh.CPUMilli = Milli(sb.Limits.CPU)
		}
	}
	if sb.State != api.StateDestroyed {
		sh.DiskBytes = sb.DiskBytes
	}
	return sh
}

// Milli is cpu cores in thousandths, as usage counts them (sums of
// fractions of cores never drift).
func Milli(cpu float64) int { return int(math.Round(cpu * 1000)) }

// holding are the states in which a sandbox holds its memory, CPU and
// pids (or may, while its driver is at work); a paused one holds no CPU.
// An unavailable one keeps holding them: its node may return with it
// running.
var holding = []api.SandboxState{api.StateCreating, api.StateStarting, api.StateRunning, api.StatePaused, api.StateStopping, api.StateDestroying,
	api.StateUnavailable}

// Holding reports whether a sandbox in state s holds its limits.
func Holding(s api.SandboxState) bool {
	for _, h := range holding {
		if s == h {
			return true
		}
	}
	return false
}

// Placed reports whether a sandbox in state s counts toward its tenant's
// number of sandboxes: all but destroyed and failed (a stopped one keeps
// its files and its place).
func Placed(s api.SandboxState) bool { return s == api.StateStopped || Holding(s) }
