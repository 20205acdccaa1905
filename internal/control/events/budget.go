package events

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Budget bounds what one sandbox can put in its tenant's event log,
// whoever records it (the service, the router, the gateway): a token
// bucket per sandbox. An event beyond it is dropped and counted, and one
// api.EventEventsDropped event says how many once the sandbox has been
// quiet for Quiet, or after ReportEvery if it never is. The lifecycle
// events are never dropped (and take no token), nor are events about a
// tenant rather than a sandbox.
type Budget struct {
	Rate        float64       // events a second, sustained
	Burst       int           // events at once
	Quiet       time.Duration // how long without a drop before the report
	ReportEvery time.Duration // the longest a report of drops waits
}

// DefaultBudget is the budget of a Log whose Config names none. It is
// well above what a sandbox causes when its egress is coalesced (the
// sandbox service's egress_events.go): at most two events per destination
// named and ten seconds.
var DefaultBudget = Budget{Rate: 10, Burst: 200, Quiet: 5 * time.Second, ReportEvery: time.Minute}

// budgetPruneAbove is the number of sandboxes' budgets past which the
// idle ones (full, nothing dropped) are forgotten: a new one is the same.
const budgetPruneAbove = 1024

// reportTimeout bounds recording a report of drops.
const reportTimeout = 10 * time.Second

// undroppable are the event types a budget never drops: a sandbox's life.
var undroppable = map[string]bool{
	api.EventSandboxCreated: true, api.EventSandboxStarted: true, api.EventSandboxStopped: true,
	api.EventSandboxDestroyed: true, api.EventSandboxFailed: true, api.EventSandboxExpired: true,
	api.EventEventsDropped: true,
}

// budgets are the event budgets of sandboxes.
type budgets struct {
	cfg Budget

	mu sync.Mutex
	m  map[budgetKey]*sandboxBudget
}

// budgetKey names a sandbox with its tenant, so that an event naming
// another tenant's sandbox (which the store refuses) spends nothing of
// that sandbox's budget.
type budgetKey struct{ tenant, sandbox string }

// sandboxBudget is one sandbox's bucket and what it dropped since the
// last report.
type sandboxBudget struct {
	lim         *rate.Limiter
	dropped     int
	types       map[string]int
	first, last time.Time
	timer       *time.Timer // the report's, while drops are pending
}

// dropReport is what one report of drops says.
type dropReport struct {
	tenant, sandbox string
	dropped         int
	types           map[string]int
	first, last     time.Time
}

// admit takes a token for e, or counts it as dropped and returns false.
// tenant is e's tenant (the caller's, when e names none).
func (l *Log) admit(e *Event, tenant string) bool {
	if e.SandboxID == "" || undroppable[e.Type] {
		return true
	}
	b := &l.budgets
	k := budgetKey{tenant, e.SandboxID}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	sb := b.m[k]
	if sb == nil {
		if b.m == nil {
			b.m = map[budgetKey]*sandboxBudget{}
		}
		if len(b.m) >= budgetPruneAbove {
			b.prune(now)
		}
		sb = &sandboxBudget{lim: rate.NewLimiter(rate.Limit(b.cfg.Rate), b.cfg.Burst)} // starts full
		b.m[k] = sb
	}
	if sb.lim.AllowN(now, 1) {
		return true
	}
	if sb.dropped == 0 {
		sb.first, sb.types = now, map[string]int{}
		sb.timer = time.AfterFunc(b.cfg.Quiet, func() { l.reportDrops(k) })
	}
	sb.dropped++
	sb.types[e.Type]++
	sb.last = now
	return false
}

// prune forgets the budgets that are full and owe no report.
func (b *budgets) prune(now time.Time) {
	for k, sb := range b.m {
		if sb.dropped == 0 && sb.lim.TokensAt(now) >= float64(b.cfg.Burst) {
			delete(b.m, k)
		}
	}
}

// take returns sb's pending report and starts counting afresh; ok is
// false when nothing was dropped.
func (sb *sandboxBudget) take(k budgetKey) (dropReport, bool) {
	if sb == nil || sb.dropped == 0 {
		return dropReport{}, false
	}
	if sb.timer != nil {
		sb.timer.Stop()
	}
	r := dropReport{tenant: k.tenant, sandbox: k.sandbox, dropped: sb.dropped, types: sb.types, first: sb.first, last: sb.last}
	sb.dropped, sb.types, sb.timer = 0, nil, nil
	return r, true
}

// reportDrops runs on a sandbox's report timer: it records the drops once
// the sandbox has been quiet for Quiet or they have waited ReportEvery,
// else it looks again when that will be.
func (l *Log) reportDrops(k budgetKey) {
	b := &l.budgets
	now := time.Now()
	b.mu.Lock()
	sb := b.m[k]
	if sb == nil || sb.dropped == 0 {
		b.mu.Unlock()
		return
	}
	quiet, due := sb.last.Add(b.cfg.Quiet).Sub(now), sb.first.Add(b.cfg.ReportEvery).Sub(now)
	if quiet > 0 && due > 0 {
		sb.timer = time.AfterFunc(min(quiet, due), func() { l.reportDrops(k) })
		b.mu.Unlock()
		return
	}
	r, _ := sb.take(k)
	b.mu.Unlock()
	l.recordDrops(r)
}

// FlushDrops records at once what was dropped of sandboxID's events, or
// of every sandbox's when sandboxID is empty (shutdown).
func (l *Log) FlushDrops(sandboxID string) {
	b := &l.budgets
	var rs []dropReport
	b.mu.Lock()
	for k, sb := range b.m {
		if sandboxID != "" && k.sandbox != sandboxID {
			continue
		}
		if r, ok := sb.take(k); ok {
			rs = append(rs, r)
		}
	}
	b.mu.Unlock()
	for _, r := range rs {
		l.recordDrops(r)
	}
}

// recordDrops appends the report of r's drops, past the budget.
func (l *Log) recordDrops(r dropReport) {
	types := make(map[string]any, len(r.types))
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(r.types)) {
		types[t] = r.types[t]
		parts = append(parts, fmt.Sprintf("%s %d", t, r.types[t]))
	}
	e := &Event{
		TenantID: r.tenant, SandboxID: r.sandbox, Type: api.EventEventsDropped,
		Message: truncate(fmt.Sprintf("%d events of this sandbox were not recorded: it caused more than %g a second (%s)",
			r.dropped, l.budgets.cfg.Rate, strings.Join(parts, ", ")), store.MaxEventMessage),
		Data: map[string]any{"dropped": r.dropped, "types": types,
			"first_at": r.first.UTC().Format(time.RFC3339Nano), "last_at": r.last.UTC().Format(time.RFC3339Nano)},
	}
	ctx, cancel := context.WithTimeout(tenancy.System(context.Background()), reportTimeout)
	defer cancel()
	if err := l.append(ctx, e); err != nil {
		l.log.Error("record dropped events", logattr.Sandbox(r.sandbox), logattr.Tenant(r.tenant), "dropped", r.dropped, "err", err)
	}
}
