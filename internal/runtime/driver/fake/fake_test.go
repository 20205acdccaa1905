package fake_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/drivertest"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
)

// TestConformance runs the driver conformance suite on the fake, so that
// the tests of the layers above run on a driver that keeps the contract.
func TestConformance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandboxes")
	// The fake's default capabilities claim limits, so that the layers
	// above can be tested with them; it has no cgroups and enforces none,
	// so the suite runs it with the capabilities it keeps.
	caps := fake.New(fake.Config{}).Capabilities()
	caps.Limits = driver.LimitCaps{}
	d := fake.New(fake.Config{Dir: dir, Capabilities: &caps})
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(d) })
	drivertest.Run(t, drivertest.Suite{
		// The fake's agents live in its memory, which is all its host
		// state: the driver a restarted control plane would find is this
		// one.
		New: func(*testing.T) driver.Driver { return d },
		Leftovers: func(id string) []string {
			if _, err := os.Lstat(filepath.Join(dir, id)); err == nil {
				return []string{filepath.Join(dir, id)}
			}
			return nil
		},
		Skip: map[string]string{
			"Isolation": "the fake isolates nothing by design: its commands run as the test process, on the host's files and network",
		},
	})
}
