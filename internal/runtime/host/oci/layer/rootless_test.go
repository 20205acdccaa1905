package layer_test

import (
	"os"
	"testing"

	"github.com/hutchdev/hutch/internal/testutil"
)

// envRootless marks the run TestRootless starts.
const envRootless = "HUTCH_LAYER_ROOTLESS"

// TestRootless runs this package's tests again as an unprivileged user
// (nobody), as a rootless hutch unpacks: the attacks must fail the same
// way without root's powers, and read-only directories must not stop a
// layer. What needs root skips there, saying why.
func TestRootless(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("runs from a root run, which starts the unprivileged one")
	}
	dir, err := os.MkdirTemp("", "hutch-layer-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := testutil.RerunAsNobody(t, dir, []string{"-test.count=1", "-test.v", "-test.skip=^TestRootless$"}, envRootless+"=1")
	t.Logf("as uid %d:\n%s", testutil.Nobody, out)
}
