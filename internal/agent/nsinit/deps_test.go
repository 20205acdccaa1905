package nsinit

import (
	"testing"

	"github.com/hutchdev/hutch/internal/testutil"
)

// TestImportsOnlyStdAndXSys guards what hutch-agent links through this
// package.
func TestImportsOnlyStdAndXSys(t *testing.T) { testutil.StdAndXSysOnly(t) }
