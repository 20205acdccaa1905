package apps

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// roleSandbox is the sandbox role ("" is dev) of one of the caller's
// ready apps points at.
func (s *Service) roleSandbox(ctx context.Context, id, role string) (*store.App, string, string, error) {
	a, err := s.ready(ctx, id)
	if err != nil {
		return nil, "", "", err
	}
	switch role {
	case "", api.RoleDev:
		return a, a.Dev, api.RoleDev, nil
	case api.RoleLive:
		return a, a.Live, api.RoleLive, nil
	}
	return nil, "", "", errdefs.Invalid("invalid_role", "role %q is not %s or %s", role, api.RoleDev, api.RoleLive)
}

// Processes is what the supervisor of role's sandbox runs.
func (s *Service) Processes(ctx context.Context, id, role string) (api.AppProcesses, error) {
	a, sb, role, err := s.roleSandbox(ctx, id, role)
	if err != nil {
		return api.AppProcesses{}, err
	}
	st, err := s.supervise(ctx, a, sb, role)
	if err != nil {
		return api.AppProcesses{}, err
	}
	out := api.AppProcesses{Role: role, Sandbox: sb, Processes: st.Processes}
	if st.ManifestError != nil {
		out.ManifestError = st.ManifestError.Error()
	}
	return out, nil
}

// Logs streams one process's log from role's sandbox, line by line.
func (s *Service) Logs(ctx context.Context, id, role, name string, tail int, follow bool) (sandbox.Stream[api.AppLogLine], error) {
	_, sb, _, err := s.roleSandbox(ctx, id, role)
	if err != nil {
		return nil, err
	}
	return s.sbx.AppLogs(ctx, sb, name, tail, follow)
}
