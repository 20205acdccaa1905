package namespace

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Probe proves the driver works on this host by doing what a user would:
// it creates a sandbox, runs `true` in it and destroys it. hutch serve
// calls it before choosing this driver on its own.
func (d *Driver) Probe(ctx context.Context) (retErr error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	spec := driver.Spec{
		SandboxID:    ids.New(),
		Template:     "host",
		Limits:       api.Limits{MemoryMB: 64, Pids: 64},
		Token:        ids.Token(32),
		MaxFileBytes: 1 << 20,
	}
	h, err := d.Create(ctx, spec)
	if err != nil {
		return fmt.Errorf("create a test sandbox: %w", err)
	}
	defer func() {
		if err := d.Destroy(context.WithoutCancel(ctx), h); err != nil && retErr == nil {
			retErr = fmt.Errorf("destroy the test sandbox: %w", err)
		}
	}()
	c := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info))
	defer c.Close()
	st, err := c.Exec(ctx, api.ExecRequest{Cmd: []string{"true"}})
	if err != nil {
		return fmt.Errorf("run a command in the test sandbox: %w", err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			return fmt.Errorf("run a command in the test sandbox: %w", err)
		}
		if ev.Type == api.ExecExit {
			if ev.Exit.ExitCode != 0 {
				return fmt.Errorf("`true` in the test sandbox exited %d: %s", ev.Exit.ExitCode, ev.Exit.Error)
			}
			return nil
		}
	}
}
