package apps

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// Environment every app process and task sees.
const (
	EnvApp  = "HUTCH_APP"      // the app's name
	EnvRole = "HUTCH_APP_ROLE" // live or dev
	EnvBase = "HUTCH_APP_BASE" // the path the role is served under: "/" or "/dev/"
)

// base is the path a role is served under.
func base(role string) string {
	if role == api.RoleDev {
		return "/dev/"
	}
	return "/"
}

// roleEnv is the environment of role's processes: the role's own and the
// config delivered to the runtime.
func (s *Service) roleEnv(ctx context.Context, a *store.App, role string) (map[string]string, error) {
	env, err := s.configEnv(ctx, a, api.AccessRuntime)
	if err != nil {
		return nil, err
	}
	env[EnvApp], env[EnvRole], env[EnvBase] = a.Name, role, base(role)
	return env, nil
}

// supervise has the supervisor of sandbox id run the app as role (starting
// the sandbox if it is stopped), keeps the web process's port for the
// router, and returns the supervisor's status. Configuring an agent that
// already runs the same configuration changes nothing.
func (s *Service) supervise(ctx context.Context, a *store.App, id, role string) (sandbox.AppStatus, error) {
	unlock := s.superviseLocks.Lock(id)
	defer unlock()
	sb, err := s.sbx.Get(ctx, id)
	if err != nil {
		return sandbox.AppStatus{}, err
	}
	if sb.State == api.StateStopped {
		if _, err := s.sbx.Start(ctx, id); err != nil {
			return sandbox.AppStatus{}, err
		}
	}
	env, err := s.roleEnv(ctx, a, role)
	if err != nil {
		return sandbox.AppStatus{}, err
	}
	st, err := s.sbx.AppConfigure(ctx, id, sandbox.AppConfig{Dir: Dir, Env: env})
	if err != nil {
		return st, fmt.Errorf("app %s: supervise %s sandbox %s: %w", a.Name, role, id, err)
	}
	s.cache.setPort(id, webPort(st))
	return st, nil
}

// webPort is the port of the web process the supervisor runs, 0 for none.
func webPort(st sandbox.AppStatus) int {
	if st.Manifest == nil || st.Manifest.Web == nil {
		return 0
	}
	return st.Manifest.Web.Port
}

// resupervise configures both roles again (config changed): each running
// sandbox gets the new environment, and its processes restart if it
// differs.
func (s *Service) resupervise(ctx context.Context, a *store.App) {
	for _, r := range []struct{ id, role string }{{a.Dev, api.RoleDev}, {a.Live, api.RoleLive}} {
		if r.id == "" {
			continue
		}
		sb, err := s.sbx.Get(ctx, r.id)
		if err != nil || sb.State != api.StateRunning {
			s.cache.forgetPort(r.id) // a stopped or paused one gets it when it next serves
			continue
		}
		if _, err := s.supervise(ctx, a, r.id, r.role); err != nil {
			s.log.Warn("apps: apply config", "app", a.Name, "role", r.role, "err", err)
		}
	}
}
