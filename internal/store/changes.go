package store

import "context"

// Notifier is a store that several control planes may share and that
// tells each of them what the others change, so that what a plane keeps
// in memory (keys, sandbox records) and the requests it holds open (a
// revoked key's streams) follow a write on any plane within moments
// rather than at the next read. The server finds it by type assertion; a
// store of one process (SQLite) has none, since every write is its own
// server's and each part learns of its own writes where it makes them.
type Notifier interface {
	// Subscribe calls fn with a Change for every write of the kinds
	// below that commits after Subscribe returns, this process's own
	// writes included, until stop is called or the store closes. Calls
	// come from one goroutine, one at a time, in commit order, so fn
	// must return soon: it may read the store (the feed listens on a
	// connection of its own), but later changes wait for it. fn must not
	// call Subscribe or stop. ctx bounds Subscribe alone (the first
	// subscription connects the feed); the ctx fn is given ends when the
	// store closes. A call under way may finish after stop returns.
	//
	// Delivery is at most once: a Change that a lost connection to the
	// database kept from this process is never delivered. Instead, once
	// the feed listens again, fn gets ChangeResync: anything may have
	// changed meanwhile, so fn must drop everything it keeps.
	Subscribe(ctx context.Context, fn func(context.Context, Change)) (stop func(), err error)
}

// ChangeKind says what a Change is about.
type ChangeKind string

// The kinds of Change.
const (
	// ChangeKey: key KeyID of tenant TenantID was revoked (deleted).
	// Keys are never changed otherwise, bar their LastUsedAt, which is
	// not told.
	ChangeKey ChangeKind = "key"
	// ChangeTenant: tenant TenantID's state changed.
	ChangeTenant ChangeKind = "tenant"
	// ChangeSandbox: the record of sandbox SandboxID of tenant TenantID
	// was written, at revision Rev (Sandbox.Rev), or erased (Rev 0).
	ChangeSandbox ChangeKind = "sandbox"
	// ChangeEvents: events were appended to tenant TenantID's log.
	ChangeEvents ChangeKind = "events"
	// ChangeResync: changes may have been missed (the feed lost its
	// connection and listens again; Err says why it lost it). Drop
	// everything kept.
	ChangeResync ChangeKind = "resync"
)

// Change is one committed write, as a Notifier tells it: which kind,
// and the ids that kind names (the others are empty).
type Change struct {
	Kind      ChangeKind
	TenantID  string
	KeyID     string
	SandboxID string
	Rev       int64
	Err       error
}
