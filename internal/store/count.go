package store

import "github.com/hutchdev/hutch/api"

// SandboxCount is how many sandboxes are in one state on one driver
// (Store.CountSandboxes).
type SandboxCount struct {
	State  api.SandboxState
	Driver string
	N      int
}
