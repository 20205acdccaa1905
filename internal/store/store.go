// Package store owns hutch's persistent state: tenants, API keys,
// sandboxes and the event log. It declares the Store interface and its
// records; sqlite/ and (later) postgres/ implement it, and storetest/ is the
// behaviour both must show.
//
// Tenancy is enforced here, not in handlers: every tenant-scoped method reads
// the tenancy.Principal from ctx and touches only that tenant's rows. A call
// without a principal fails with errdefs.ErrForbidden (code "no_tenant")
// unless ctx is marked by tenancy.System. Another tenant's row behaves
// exactly like a missing one.
package store

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Store is hutch's persistent state.
//
// Lifecycle: an implementation's Open creates or migrates the database and
// returns a ready Store; every method is safe for concurrent use; Close
// releases the database and must be called once, after the last call.
//
// Times are kept in UTC to the microsecond (see Time): a record read back
// equals the record written once its times are passed through Time. Create
// methods that take a pointer normalise the caller's record in place, so it
// equals what a later Get returns.
type Store interface {
	// CreateTenant creates a tenant and, in the same transaction, its
	// initial keys (whose TenantID must be the tenant's). Only an admin
	// principal or the system may create tenants.
	CreateTenant(ctx context.Context, t Tenant, keys ...Key) error
	// GetTenant returns the caller's own tenant; admins and the system may
	// read any tenant.
	GetTenant(ctx context.Context, id string) (Tenant, error)
	// ListTenants returns every tenant, oldest first. Admin or system only.
	ListTenants(ctx context.Context) ([]Tenant, error)
	// SetTenantQuotas replaces a tenant's quotas (CheckQuotas) and returns
	// the tenant as written. Admin or system only: a tenant's own keys may
	// read its quotas (GetTenant) but never change them.
	SetTenantQuotas(ctx context.Context, id string, q api.Quotas) (Tenant, error)

	// CreateKey stores a key in the caller's tenant (k.TenantID must be it,
	// unless ctx is the system's), made by the caller's key (k.CreatedBy:
	// set to it when empty, refused when another). A key creates only keys
	// of its own role or below, and a reader none (tenancy.RoleRequired);
	// the system any. A key revoked before the write commits creates
	// nothing (key_not_found). CreateTenant's keys follow the same rules.
	CreateKey(ctx context.Context, k Key) error
	// ListKeys returns the caller's tenant's keys, oldest first.
	ListKeys(ctx context.Context) ([]Key, error)
	// DeleteKey deletes one of the caller's tenant's keys, the key the
	// caller is using included, and, with cascade, every key it created,
	// transitively, even through keys deleted before (an admin's reaches
	// the first keys of the tenants it created, and theirs). It returns
	// the ids deleted, id first. A key deletes only keys of its own role or
	// below, and a reader none (tenancy.RoleRequired); the system any. A
	// delete that would leave no admin key anywhere is refused
	// (LastAdminKey), and so is all of it when any part is refused.
	DeleteKey(ctx context.Context, id string, cascade bool) ([]string, error)
	// LookupKey returns any tenant's key by id. It is not scoped: auth calls
	// it to learn the tenant. Nothing else should.
	LookupKey(ctx context.Context, id string) (Key, error)
	// TouchKey sets a key's LastUsedAt.
	TouchKey(ctx context.Context, id string, at time.Time) error

	// CreateSandbox stores sb in the caller's tenant, setting sb.TenantID
	// (the system must set it itself), an ID if empty, and CreatedAt and
	// UpdatedAt if zero.
	CreateSandbox(ctx context.Context, sb *Sandbox) error
	// GetSandbox returns one of the caller's tenant's sandboxes.
	GetSandbox(ctx context.Context, id string) (*Sandbox, error)
	// ListSandboxes returns a page of the caller's tenant's sandboxes,
	// newest first, and the cursor of the next page ("" after the last).
	ListSandboxes(ctx context.Context, opts ListOptions) ([]*Sandbox, string, error)
	// UpdateSandbox reads a sandbox, lets fn change it and writes it back,
	// all in one write transaction, and returns what it wrote. An error from
	// fn aborts the update and is returned as is. fn must not call the
	// store. ID, TenantID and CreatedAt cannot be changed; UpdatedAt is set
	// to now.
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (*Sandbox, error)
	// AllSandboxes returns every tenant's sandboxes in the given states (all
	// states if none), oldest first. System only: recovery and reaping.
	AllSandboxes(ctx context.Context, states ...api.SandboxState) ([]*Sandbox, error)
	// CountSandboxes counts every tenant's sandboxes by state and driver
	// (destroyed ones included), ordered by state and driver; a pair with
	// none is left out. System only: the metrics.
	CountSandboxes(ctx context.Context) ([]SandboxCount, error)
	// DeleteSandbox removes a sandbox's row. Destroying a sandbox only sets
	// its state; this is for garbage collection and tests.
	DeleteSandbox(ctx context.Context, id string) error

	// AppendEvent records e in the caller's tenant, setting e.TenantID (the
	// system must set it itself), e.ID and, if zero, e.CreatedAt, and
	// normalising e.Data to what a read returns. The store assigns the ID,
	// whatever e.ID held: IDs increase in the order appends commit, so a
	// reader resuming after the last ID it saw never misses an event. A
	// SandboxID must name a sandbox of the same tenant. Events are never
	// changed; they go only with their tenant or their sandbox's row.
	AppendEvent(ctx context.Context, e *Event) error
	// ListEvents returns a page of the caller's tenant's events matching q,
	// oldest first, and the cursor of the next page: the ID of the page's
	// last event, or "" when the page held every match recorded so far.
	ListEvents(ctx context.Context, q EventQuery) ([]Event, string, error)
	// TrimEvents deletes every tenant's events older than tr.Before (none
	// when zero) and, of each tenant's, all but the newest
	// tr.MaxPerTenant (none when zero), and returns how many it deleted.
	// It deletes in batches of at most TrimBatch events, each its own
	// short write, so appends go on between them. System only: the
	// retention loop.
	TrimEvents(ctx context.Context, tr EventTrim) (int, error)

	// Secrets are addressed by name within the principal's tenant, always:
	// even the system needs a principal for them (code "no_tenant"), and an
	// admin reaches only its own tenant's. The store keeps only the sealed
	// value (internal/control/secrets seals and opens it).
	//
	// CreateSecret stores sec in the caller's tenant, setting sec.TenantID
	// (the system may set it itself), an ID if empty, CreatedAt to now and
	// UpdatedAt to CreatedAt if zero. A name already used in the tenant is
	// a conflict (code "secret_exists").
	CreateSecret(ctx context.Context, sec *Secret) error
	// GetSecret returns one of the caller's tenant's secrets by name, its
	// sealed value included.
	GetSecret(ctx context.Context, name string) (*Secret, error)
	// ListSecrets returns the caller's tenant's secrets by name (every
	// tenant's, by tenant and name, for the system without a principal).
	ListSecrets(ctx context.Context) ([]Secret, error)
	// UpdateSecret reads a secret, lets fn change it and writes it back in
	// one write transaction, and returns what it wrote. An error from fn
	// aborts the update and is returned as is; fn must not call the store.
	// ID, TenantID, Name and CreatedAt cannot be changed; UpdatedAt is set
	// to now.
	UpdateSecret(ctx context.Context, name string, fn func(*Secret) error) (*Secret, error)
	// DeleteSecret deletes one of the caller's tenant's secrets.
	DeleteSecret(ctx context.Context, name string) error
	// SecretKeyIDs counts every tenant's secrets by the ID of the master
	// key that sealed them. System only: the start-up check that the
	// server's key can open what is stored.
	SecretKeyIDs(ctx context.Context) (map[string]int, error)

	// Templates are addressed by name within the principal's tenant, as
	// secrets are.
	//
	// CreateTemplate stores t in the caller's tenant, setting t.TenantID,
	// an ID if empty and CreatedAt if zero. A name already used in the
	// tenant is a conflict (code "template_exists").
	CreateTemplate(ctx context.Context, t *Template) error
	// GetTemplate returns one of the caller's tenant's templates by name.
	GetTemplate(ctx context.Context, name string) (*Template, error)
	// ListTemplates returns the caller's tenant's templates by name (every
	// tenant's, by tenant and name, for the system without a principal:
	// the layer store's garbage collection).
	ListTemplates(ctx context.Context) ([]Template, error)
	// DeleteTemplate deletes one of the caller's tenant's templates,
	// unless a sandbox of the tenant not yet destroyed, or a snapshot,
	// names it (code "template_in_use"), checked in the same transaction.
	DeleteTemplate(ctx context.Context, name string) error

	// Snapshots are the caller's tenant's, by id.
	//
	// CreateSnapshot stores s in the caller's tenant (the system may set
	// s.TenantID itself), setting an ID if empty and CreatedAt if zero.
	CreateSnapshot(ctx context.Context, s *Snapshot) error
	// GetSnapshot returns one of the caller's tenant's snapshots.
	GetSnapshot(ctx context.Context, id string) (*Snapshot, error)
	// ListSnapshots returns the caller's tenant's snapshots matching q,
	// newest first (every tenant's for the system without a principal).
	ListSnapshots(ctx context.Context, q SnapshotQuery) ([]Snapshot, error)
	// DeleteSnapshot deletes one of the caller's tenant's snapshots.
	DeleteSnapshot(ctx context.Context, id string) error

	// Volumes are addressed by name within the principal's tenant.
	//
	// CreateVolume stores v in the caller's tenant, setting an ID if
	// empty and CreatedAt if zero; a name in use is "volume_exists".
	CreateVolume(ctx context.Context, v *Volume) error
	// GetVolume returns one of the caller's tenant's volumes by name.
	GetVolume(ctx context.Context, name string) (*Volume, error)
	// ListVolumes returns the caller's tenant's volumes by name.
	ListVolumes(ctx context.Context) ([]Volume, error)
	// DeleteVolume deletes one of the caller's tenant's volumes, unless a
	// sandbox of the tenant not yet destroyed mounts it ("volume_in_use"),
	// checked in the same transaction; it returns what it deleted.
	DeleteVolume(ctx context.Context, name string) (*Volume, error)

	// Settings are server-wide (settings.go): admin or system only.
	//
	// Settings returns every stored setting by key, each as the JSON
	// written; an empty map when none is.
	Settings(ctx context.Context) (map[string]json.RawMessage, error)
	// PutSettings writes changes (CheckSettingChanges), each key's value
	// replacing the one stored, all in one transaction.
	PutSettings(ctx context.Context, changes map[string]json.RawMessage) error

	// Close releases the database.
	Close() error
}

// Tenant owns every other resource.
type Tenant struct {
	ID        string
	Name      string // unique
	CreatedAt time.Time
	// Quotas are what an admin set on the tenant; a nil field follows the
	// server's default (the sandbox service applies them at admission).
	Quotas api.Quotas
}

// CheckQuotas refuses a quota that is negative or, for CPU, not a finite
// number (400 invalid_quota). Zero is no limit; nil is the server's
// default.
func CheckQuotas(q api.Quotas) error {
	for name, v := range map[string]*int{"sandboxes": q.Sandboxes, "memory_mb": q.MemoryMB, "pids": q.Pids, "disk_mb": q.DiskMB} {
		if v != nil && *v < 0 {
			return errdefs.Invalid("invalid_quota", "quota %s must be 0 (no limit) or positive, not %d", name, *v)
		}
	}
	if c := q.CPU; c != nil && (*c < 0 || math.IsNaN(*c) || math.IsInf(*c, 0)) {
		return errdefs.Invalid("invalid_quota", "quota cpu must be 0 (no limit) or a positive number of cores")
	}
	return nil
}

// Key is an API key. Only a hash of its secret is kept.
type Key struct {
	ID         string
	TenantID   string
	Name       string
	Role       string // api.RoleAdmin, api.RoleMember or api.RoleReader
	Prefix     string // the public part of the key, safe to show
	Hash       []byte
	CreatedBy  string // the ID of the key that created it; "" when the system did
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// Secret is a secret's persisted record: metadata and the value as sealed
// by internal/control/secrets. The store never sees a plaintext value.
type Secret struct {
	ID          string
	TenantID    string
	Name        string // unique in its tenant; see CheckSecretName
	Description string
	ValueBytes  int    // the plaintext's length
	KeyID       string // the master key that sealed the value
	Nonce       []byte
	Ciphertext  []byte // the sealed value, with its authentication tag
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Sandbox is a sandbox's persisted record. Empty maps and an empty Handle
// come back nil.
type Sandbox struct {
	ID       string
	TenantID string
	State    api.SandboxState
	Template string
	Driver   string
	Env      map[string]string
	Cwd      string
	Limits   api.Limits
	TimeoutS int
	Labels   map[string]string
	Root     bool // commands run as root inside the sandbox
	Network  api.NetworkPolicy
	// Volumes are the volumes it mounts, by name.
	Volumes []api.VolumeMount
	// OnExpiry is what its expiry does: api.OnExpiryDestroy (also when
	// empty) or api.OnExpiryStop.
	OnExpiry string
	Handle   []byte // the driver's handle, opaque here
	Error    string // why it failed
	// Node is the control plane that owns the sandbox: the one that
	// recovers, reaps and sweeps it ("" before nodes were recorded).
	Node string

	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt *time.Time
	// PausedAt is when it was paused, while it is paused.
	PausedAt *time.Time
	// IdleTimeoutS is its own idle window in seconds (0: the server's);
	// KeepaliveUntil keeps it from idle actions until then.
	IdleTimeoutS   int
	KeepaliveUntil *time.Time
}

// ListOptions filter and page ListSandboxes.
type ListOptions struct {
	State  api.SandboxState  // only this state, if set
	Labels map[string]string // only sandboxes carrying every one of these
	Limit  int               // page size: DefaultLimit if <= 0, at most MaxLimit
	Cursor string            // from the previous page
}

// Event is one entry of the append-only event log.
type Event struct {
	ID        string // ULID, assigned by AppendEvent
	TenantID  string
	SandboxID string // empty for an event about the tenant
	// AppID marks an event of an app's log (GET /v1/apps/{id}/events).
	AppID   string
	Type    string // api.EventSandboxCreated, …
	Message string // safe to show a user
	// Data holds small details, as JSON: it comes back as encoding/json
	// decodes an object (numbers as float64); empty comes back nil.
	Data      map[string]any
	CreatedAt time.Time
}

// EventQuery filters and pages ListEvents.
type EventQuery struct {
	SandboxID string   // only this sandbox's events, if set
	AppID     string   // only this app's events, if set
	Types     []string // only events of one of these types, if any
	After     string   // only events after this event ID (a cursor)
	Limit     int      // page size: DefaultLimit if <= 0, at most MaxLimit
}

// EventTrim is what TrimEvents deletes.
type EventTrim struct {
	Before       time.Time // events created before it; none if zero
	MaxPerTenant int       // keep each tenant's newest this many; all if <= 0
}

// TrimBatch bounds the events one write of TrimEvents deletes.
const TrimBatch = 1000

// Page sizes of ListSandboxes and ListEvents.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// PageSize returns the page size ListSandboxes and ListEvents use for
// limit.
func PageSize(limit int) int {
	switch {
	case limit <= 0:
		return DefaultLimit
	case limit > MaxLimit:
		return MaxLimit
	}
	return limit
}

// Precision is how finely every store keeps times. Postgres keeps
// microseconds, so SQLite keeps no more.
const Precision = time.Microsecond

// Time returns t as a store gives it back: in UTC, truncated to Precision,
// without a monotonic reading.
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(Precision)
}

// TimePtr is Time for an optional time.
func TimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}
