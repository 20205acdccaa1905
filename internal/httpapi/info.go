package httpapi

import (
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/driver"
)

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (a *API) info(w http.ResponseWriter, r *http.Request) {
	svc := a.cfg.Sandboxes
	caps := svc.Driver().Capabilities()
	cfg := svc.Config()
	_, oomReport := svc.Driver().(driver.OOMCounter)
	writeJSON(w, http.StatusOK, api.Info{
		Version:   a.cfg.Version,
		Driver:    svc.Driver().Name(),
		Isolation: caps.Isolation,
		Degraded:  append([]string{}, caps.Degraded...),
		Templates: caps.Templates,
		Limits: api.InfoLimits{
			Default:        cfg.DefaultLimits,
			Max:            cfg.MaxLimits,
			MaxTimeoutS:    int(cfg.MaxTimeout.Seconds()),
			MaxFileBytes:   cfg.MaxFileBytes,
			MaxOutputBytes: cfg.MaxOutputBytes,
		},
		Features: map[string]bool{
			"start_stop":   caps.StartStop,
			"memory_limit": caps.Limits.Memory,
			"cpu_limit":    caps.Limits.CPU,
			"pids_limit":   caps.Limits.Pids,
			"root_user":    caps.RootUser,
			"oom_report":   oomReport,
		},
	})
}
