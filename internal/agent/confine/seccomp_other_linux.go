//go:build !amd64 && !arm64

package confine

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// haveSeccompTable is false: hutch carries syscall tables for amd64 and
// arm64 only, so elsewhere Apply reports seccomp as missing.
const haveSeccompTable = false

func buildFilter(bool) ([]unix.SockFilter, error) {
	return nil, fmt.Errorf("confine: no seccomp syscall table for %s", runtime.GOARCH)
}
