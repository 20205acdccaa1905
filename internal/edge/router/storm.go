package router

import (
	"fmt"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/events"
)

// A reconnect storm is StormUpgrades or more WebSocket upgrades to one
// sandbox's previews (or one role of an app) within stormWindow: a client reconnecting in a loop.
// Each storm is logged and recorded as an event at most once per
// stormReportEvery per sandbox.
const (
	StormUpgrades    = 30
	stormWindow      = 10 * time.Second
	stormReportEvery = time.Minute
	maxStormEntries  = 4096
)

type storms struct {
	mu sync.Mutex
	m  map[string]*storm
}

// storm counts one sandbox's upgrades in the current window.
type storm struct {
	start    time.Time
	n        int
	port     int // the port of the latest upgrade
	reported time.Time
}

// upgradeTarget is what a WebSocket upgrade reached: the storm detector
// counts by key (a sandbox, or an app's role) and reports the rest.
type upgradeTarget struct {
	key, tenantID, sandboxID string
	port                     int
	what                     string // "port 5173", "app shop (dev)"
}

// noteUpgrade counts an upgrade to u and reports a storm when one starts.
func (rt *Router) noteUpgrade(u upgradeTarget) {
	port := u.port
	now := rt.cfg.Now()
	rt.storms.mu.Lock()
	if rt.storms.m == nil {
		rt.storms.m = map[string]*storm{}
	}
	s := rt.storms.m[u.key]
	if s == nil {
		if len(rt.storms.m) >= maxStormEntries {
			for id, old := range rt.storms.m {
				if now.Sub(old.start) >= stormReportEvery {
					delete(rt.storms.m, id)
				}
			}
		}
		s = &storm{start: now}
		rt.storms.m[u.key] = s
	}
	if now.Sub(s.start) >= stormWindow {
		s.start, s.n = now, 0
	}
	s.n++
	s.port = port
	report := s.n >= StormUpgrades && (s.reported.IsZero() || now.Sub(s.reported) >= stormReportEvery)
	if report {
		s.reported = now
	}
	n := s.n
	rt.storms.mu.Unlock()
	if !report {
		return
	}
	rt.log.Warn("preview: reconnect storm", logattr.Sandbox(u.sandboxID), "target", u.what, "upgrades", n, "window_s", stormWindow.Seconds())
	if rt.cfg.Events != nil {
		events.Record(rt.cfg.Events, rt.log, &events.Event{TenantID: u.tenantID, SandboxID: u.sandboxID, Type: api.EventPreviewReconnectStorm,
			Message: fmt.Sprintf("%d WebSocket connections to %s within %s: a client is reconnecting in a loop", n, u.what, stormWindow),
			Data:    map[string]any{"port": port, "count": n, "window_s": int(stormWindow / time.Second), "target": u.what}})
	}
}
