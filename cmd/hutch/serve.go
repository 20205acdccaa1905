package main

// PLACEHOLDER — NOT THE REAL serve.go.
//
// The client/CLI session overwrote the real cmd/hutch/serve.go by mistake
// at about 09:06 (it had appeared between two of its commands). Restore the
// original over this file; nothing else in cmd/hutch depends on more than
// the signature below.

import (
	"context"
	"errors"
)

// runServe must be replaced by the real server entry point.
func runServe(ctx context.Context, args []string) error {
	return errors.New("serve: placeholder serve.go; the real cmd/hutch/serve.go was overwritten and must be restored")
}
