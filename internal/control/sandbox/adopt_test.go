package sandbox

import (
	"context"
	"slices"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
)

// adopter is the fake driver as one whose sandboxes every node reaches.
type adopter struct {
	*fake.Driver
	adopted []string
}

func (a *adopter) Adopt(_ context.Context, h driver.Handle) error {
	a.adopted = append(a.adopted, h.Agent.Address)
	return nil
}

// TestAdopt: node-b takes over a running sandbox of lost node-a whose
// driver every node reaches: the record is node-b's, running, its agent
// answers through node-b, its driver was told, and its events say it
// was unavailable and is available again. Offered again, it is not taken
// twice; on a driver that is no Adopter nothing is taken.
func TestAdopt(t *testing.T) {
	var shared *adopter
	a := newLiveFixture(t, func(c *Config) {
		shared = &adopter{Driver: c.Drivers.Default().(*fake.Driver)}
		c.Drivers = driver.Single(shared)
	})
	sb := a.create(t)
	cfg := a.svc.cfg
	cfg.Node = "node-b"
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)

	sys := tenancy.System(context.Background())
	recs, err := a.st.AllSandboxes(sys, Recoverable...)
	if err != nil {
		t.Fatal(err)
	}
	if n, rest := b.Adopt(sys, "node-a", recs); n != 1 || len(rest) != 0 {
		t.Fatalf("Adopt = %d, %d left; want the sandbox taken", n, len(rest))
	}
	rec, err := a.st.GetSandbox(a.ctx, sb.ID)
	if err != nil || rec.Node != "node-b" || rec.State != api.StateRunning {
		t.Fatalf("after Adopt the record is %+v, %v; want node-b's, running", rec, err)
	}
	if len(shared.adopted) != 1 {
		t.Errorf("the driver was told of %d adoptions; want 1", len(shared.adopted))
	}
	if res, err := b.Exec(a.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Errorf("exec through node-b: %+v, %v", res, err)
	}
	types := a.eventTypes(t, sb.ID)
	if !slices.Contains(types, api.EventSandboxUnavailable) || !slices.Contains(types, api.EventSandboxAvailable) {
		t.Errorf("events %v; want unavailable, then available", types)
	}
	if n, _ := b.Adopt(sys, "node-a", recs); n != 0 {
		t.Errorf("a second Adopt of the same records took %d", n)
	}

	// On a driver no other node reaches, nothing moves.
	c := newLiveFixture(t, nil)
	other := c.create(t)
	cfg = c.svc.cfg
	cfg.Node = "node-c"
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	recs, _ = c.st.AllSandboxes(sys, Recoverable...)
	if n, rest := d.Adopt(sys, "node-a", recs); n != 0 || len(rest) != 1 || rest[0].ID != other.ID {
		t.Errorf("Adopt on a driver that is no Adopter = %d, %v", n, rest)
	}
	if rec, _ := c.st.GetSandbox(c.ctx, other.ID); rec.Node != "node-a" {
		t.Errorf("the sandbox moved to %s", rec.Node)
	}
}
