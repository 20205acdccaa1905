package quota

import (
	"context"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Amount is an amount of what a tenant holds: what it holds now, or what
// a create adds (an Ask). Its dimensions are the store's usage.
type Amount = store.TenantUsage

// Ask is what one create adds to its tenant: a sandbox (1 with its
// limits, and the bytes it starts with when it starts from a snapshot), a
// snapshot, a volume (its size), a template, an app, a key or a secret.
// Bytes not known before the work (a snapshot's, a template's) are asked
// as estimated, and the Claim's Commit checks what was really made.
type Ask = Amount

// Claim is the room an admission holds from Admit until the record that
// takes it is written (Commit) or the create gives up (Cancel): meanwhile
// every other admission counts it. Exactly one of Commit and Cancel ends
// it; Cancel after Commit does nothing, so a deferred Cancel is safe.
type Claim struct {
	s      *Service
	tenant string
	limits api.QuotaLimits
	ask    Ask
	done   bool
}

// Admit admits ask for tenantID against its quotas, counting what it
// holds and what the admissions in flight claim. node, when not nil, is
// called under the same lock with everything the admissions in flight of
// this server claim, so a check of this node's capacity is serialised
// with the quotas (the sandbox service's). A refusal is 429
// quota_exceeded naming the quota, or node's error.
func (s *Service) Admit(ctx context.Context, tenantID string, ask Ask, node func(pending Amount) error) (*Claim, error) {
	if s == nil {
		return &Claim{}, nil
	}
	sys := tenancy.System(ctx)
	t, err := s.store.GetTenant(sys, tenantID)
	if err != nil {
		return nil, err
	}
	if t.State != api.TenantActive {
		// A suspended tenant keeps what it has and adds nothing; a
		// deleted one's things are being removed. (The store refuses
		// the write too, for a suspension that lands after this read.)
		return nil, store.TenantNotActive(t.State)
	}
	limits := s.Limits(t.Quotas)
	s.mu.Lock()
	defer s.mu.Unlock()
	held, err := s.held(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if err := s.check(tenantID, limits, held, ask); err != nil {
		return nil, err
	}
	if node != nil {
		if err := node(s.pending); err != nil {
			return nil, err
		}
	}
	s.claims[tenantID] = add(s.claims[tenantID], ask, 1)
	s.pending = add(s.pending, ask, 1)
	return &Claim{s: s, tenant: tenantID, limits: limits, ask: ask}, nil
}

// Commit writes the record that takes the claim's room, with the
// admission lock held, and ends the claim. made, when not nil, is what
// the create really made where the ask was an estimate (a snapshot's or a
// template's bytes): it is checked against the quotas again first, and a
// refusal writes nothing (the caller removes what it made). On a store
// other control planes share (store.Admitter), what they admitted since
// Admit is known only to the store, so the ask is checked again too,
// with the write, under the tenant's lock in the store that theirs take.
func (c *Claim) Commit(ctx context.Context, made *Ask, write func() error) error {
	if c.s == nil {
		return write()
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c.drop()
	shared, isShared := s.store.(store.Admitter)
	if made == nil && !isShared {
		return write()
	}
	ask := c.ask
	if made != nil {
		ask = *made
	}
	checked := func() error {
		held, err := s.held(ctx, c.tenant)
		if err != nil {
			return err
		}
		if err := s.check(c.tenant, c.limits, held, ask); err != nil {
			return err
		}
		return write()
	}
	if isShared {
		return shared.Admit(ctx, c.tenant, checked)
	}
	return checked()
}

// Cancel gives the claim's room back, unless Commit ended it.
func (c *Claim) Cancel() {
	if c.s == nil {
		return
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.drop()
}

// drop ends the claim once; the caller holds the lock.
func (c *Claim) drop() {
	if c.done {
		return
	}
	c.done = true
	s := c.s
	if left := add(s.claims[c.tenant], c.ask, -1); left != (Amount{}) {
		s.claims[c.tenant] = left
	} else {
		delete(s.claims, c.tenant)
	}
	s.pending = add(s.pending, c.ask, -1)
}

// held is what tenantID holds and its admissions in flight claim; the
// caller holds the lock.
func (s *Service) held(ctx context.Context, tenantID string) (Amount, error) {
	u, err := s.store.TenantUsage(tenancy.System(ctx), tenantID)
	if err != nil {
		return Amount{}, err
	}
	return add(u, s.claims[tenantID], 1), nil
}

// add is a + sign × b.
func add(a, b Amount, sign int) Amount {
	n := int64(sign)
	a.Sandboxes += sign * b.Sandboxes
	a.MemoryMB += sign * b.MemoryMB
	a.CPUMilli += sign * b.CPUMilli
	a.Pids += sign * b.Pids
	a.SandboxDiskBytes += n * b.SandboxDiskBytes
	a.Snapshots += sign * b.Snapshots
	a.SnapshotBytes += n * b.SnapshotBytes
	a.Volumes += sign * b.Volumes
	a.VolumeMB += n * b.VolumeMB
	a.Templates += sign * b.Templates
	a.TemplateBytes += n * b.TemplateBytes
	a.Apps += sign * b.Apps
	a.Keys += sign * b.Keys
	a.Secrets += sign * b.Secrets
	return a
}

// check refuses ask when it does not fit limits beside held.
func (s *Service) check(tenantID string, l api.QuotaLimits, held, ask Amount) error {
	refuse := func(quota, msg string, args ...any) error {
		s.log.Info("create refused: tenant quota", logattr.Tenant(tenantID), "quota", quota)
		return errdefs.New(errdefs.ErrRateLimited, "quota_exceeded", "quota "+quota+" exceeded: "+msg+"; ask an admin to raise the quota if this tenant needs more", args...)
	}
	counts := []struct {
		quota, what string
		limit       int
		held, asked int
		release     string
	}{
		{"sandboxes", "sandboxes", l.Sandboxes, held.Sandboxes, ask.Sandboxes, "stopped ones count; destroy one"},
		{"snapshots", "snapshots", l.Snapshots, held.Snapshots, ask.Snapshots, "delete one"},
		{"volumes", "volumes", l.Volumes, held.Volumes, ask.Volumes, "delete one"},
		{"templates", "templates", l.Templates, held.Templates, ask.Templates, "delete one"},
		{"apps", "apps", l.Apps, held.Apps, ask.Apps, "delete one"},
		{"keys", "API keys", l.Keys, held.Keys, ask.Keys, "delete one"},
		{"secrets", "secrets", l.Secrets, held.Secrets, ask.Secrets, "delete one"},
	}
	for _, c := range counts {
		if c.asked > 0 && c.limit > 0 && c.held+c.asked > c.limit {
			return refuse(c.quota, "this tenant has %d %s of the %d allowed; %s", c.held, c.what, c.limit, c.release)
		}
	}
	limits := []struct {
		quota              string
		limit, held, asked int
		unit               func(int) string
	}{
		{"memory_mb", l.MemoryMB, held.MemoryMB, ask.MemoryMB, func(n int) string { return strconv.Itoa(n) + " MiB" }},
		{"cpu", store.Milli(l.CPU), held.CPUMilli, ask.CPUMilli, cores},
		{"pids", l.Pids, held.Pids, ask.Pids, func(n int) string { return strconv.Itoa(n) + " pids" }},
	}
	for _, c := range limits {
		if c.asked > 0 && c.limit > 0 && c.held+c.asked > c.limit {
			return refuse(c.quota, "this tenant's sandboxes that are not stopped hold %s of the %s allowed, and this one asks %s more; stop or destroy some",
				c.unit(c.held), c.unit(c.limit), c.unit(c.asked))
		}
	}
	bytes := []struct {
		quota, what string
		limit       int
		held, asked int64
	}{
		{"snapshots_mb", "snapshots", l.SnapshotsMB, held.SnapshotBytes, ask.SnapshotBytes},
		{"volumes_mb", "volumes' sizes", l.VolumesMB, held.VolumeMB << 20, ask.VolumeMB << 20},
		{"templates_mb", "templates", l.TemplatesMB, held.TemplateBytes, ask.TemplateBytes},
	}
	for _, c := range bytes {
		if c.asked > 0 && c.limit > 0 && c.held+c.asked > int64(c.limit)<<20 {
			return refuse(c.quota, "this tenant's %s take %s of the %d MiB allowed, and this one %s more; delete some",
				c.what, mib(c.held), c.limit, mib(c.asked))
		}
	}
	if l.DiskMB > 0 && addsDisk(ask) {
		limit, on, more := int64(l.DiskMB)<<20, held.DiskBytes(), ask.DiskBytes()
		if on >= limit || on+more > limit {
			var b strings.Builder
			b.WriteString("this tenant's files take %s of the %d MiB allowed (sandboxes %s, snapshots %s, volumes %s, templates %s)")
			args := []any{mib(on), l.DiskMB, mib(held.SandboxDiskBytes), mib(held.SnapshotBytes), mib(held.VolumeMB << 20), mib(held.TemplateBytes)}
			if more > 0 {
				b.WriteString(", and this one adds %s")
				args = append(args, mib(more))
			}
			b.WriteString("; delete snapshots, volumes or templates, or files in its sandboxes")
			return refuse("disk_mb", b.String(), args...)
		}
	}
	return nil
}

// addsDisk reports whether ask puts anything on disk: a sandbox's files
// (even one that starts empty will write), a snapshot, a volume, a
// template.
func addsDisk(ask Amount) bool {
	return ask.Sandboxes > 0 || ask.Snapshots > 0 || ask.Volumes > 0 || ask.Templates > 0 || ask.DiskBytes() > 0
}

// mib is n bytes in MiB for a person, rounded up.
func mib(n int64) string { return strconv.Itoa(mibUp(n)) + " MiB" }

// cores is thousandths of a core as cores.
func cores(milli int) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) + " CPU"
}
