package launch

import (
	"debug/elf"
	"fmt"
)

// CheckStatic fails when the agent binary at path is dynamically linked
// (built with cgo, as a plain `go build` on a host with a C compiler
// makes it). The agent runs inside sandboxes whose root may not hold its
// libraries, and it must run system calls on every thread, which Go does
// only without cgo: such an agent fails every sandbox, so hutch refuses
// it at start with the fix.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read the agent binary %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the agent binary %s is dynamically linked (built with cgo); build it static: CGO_ENABLED=0 go build -o bin/ ./cmd/...", path)
		}
	}
	return nil
}
