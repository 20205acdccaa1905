// Package store owns hutch's persistent state: tenants, API keys,
// sandboxes and the event log. It declares the Store interface and its
// records; sqlite/ and postgres/ implement it, and storetest/ is the
// behaviour both must show.
//
// Store is one interface per resource (Tenants, Keys, Sandboxes, Events,
// Secrets, Templates, Snapshots, Volumes, Settings, Ports, Apps, the
// Usage that quotas read, and the Nodes and Leases of a fleet), each
// declared beside its record in a file of its own, and a backend
// implements every one of them: one that lacks a part does not compile,
// so no caller looks for a part at run time. A consumer takes the
// narrowest of them it needs.
//
// Tenancy is enforced here, not in handlers: every tenant-scoped method reads
// the tenancy.Principal from ctx and touches only that tenant's rows. A call
// without a principal fails with errdefs.ErrForbidden (code "no_tenant")
// unless ctx is marked by tenancy.System. Another tenant's row behaves
// exactly like a missing one.
package store

import "time"

// Store is hutch's persistent state: every part of it.
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
	Tenants
	Keys
	Sandboxes
	Events
	Secrets
	Templates
	Snapshots
	Volumes
	Settings
	Ports
	Apps
	Usage
	Nodes
	Leases

	// Close releases the database.
	Close() error
}

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
