package hostproc

import (
	"context"
	"fmt"
	"time"
)

// TeardownTimeout bounds a teardown whose caller gave no deadline.
const TeardownTimeout = 30 * time.Second

// TeardownContext is ctx with TeardownTimeout unless it already has a
// deadline: a teardown always ends.
func TeardownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, TeardownTimeout)
}

// KillAll SIGKILLs every process match selects, again and again, until
// none is left (a process may fork while it is being killed), or fails
// when ctx ends first.
func KillAll(ctx context.Context, match func(Proc) bool) error {
	for {
		left, err := KillMatching(match)
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d processes survived SIGKILL: %w", left, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
