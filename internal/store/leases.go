package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Leases are named, expiring claims on the work that must run once per
// fleet (docs/ARCHITECTURE.md, "Nodes and leases"). A holder (a node's
// name) takes a lease for a TTL and keeps it by renewing it before the
// TTL runs out; a holder that stops renewing (its process died, or it
// lost the store) loses it when the TTL ends, and the next to ask takes
// it. Expiry is judged on the store's clock, never a holder's. Every
// method is the system's.
type Leases interface {
	// AcquireLease takes lease name for holder until ttl from now, or
	// renews it when holder holds it already, and returns the lease as it
	// stands after: held by holder if it was free, expired or holder's;
	// else unchanged, with its current holder.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error)
	// ReleaseLease gives up name if holder holds it, so another need not
	// wait for its TTL; a lease another holds is left alone.
	ReleaseLease(ctx context.Context, name, holder string) error
	// ListLeases returns every lease that has not expired, by name.
	ListLeases(ctx context.Context) ([]Lease, error)
}

// Lease is one lease as it stands.
type Lease struct {
	Name   string
	Holder string
	// AcquiredAt is when Holder took it (renewals keep it); ExpiresAt,
	// when it ends unless renewed.
	AcquiredAt time.Time
	ExpiresAt  time.Time
}

// HeldBy reports whether holder holds l.
func (l Lease) HeldBy(holder string) bool { return l.Holder == holder }

// MinLeaseTTL bounds a lease's TTL from below: a shorter one would
// expire between a holder's renewals.
const MinLeaseTTL = 100 * time.Millisecond

// CheckLease validates an AcquireLease.
func CheckLease(name, holder string, ttl time.Duration) error {
	if name == "" || holder == "" {
		return errdefs.Invalid("invalid_lease", "a lease needs a name and a holder")
	}
	if ttl < MinLeaseTTL {
		return errdefs.Invalid("invalid_lease", "a lease's TTL must be at least %v", MinLeaseTTL)
	}
	return nil
}
