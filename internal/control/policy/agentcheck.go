package policy

import (
	"context"
	"sync"

	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// checkAgents checks, beside the calls that reported them and once at a
// time per sandbox, the agents the service reports lost
// (sandbox.LostAgents), until ctx ends; it returns once its checks have.
func checkAgents(ctx context.Context, svc *sandbox.Service) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		checking = map[string]bool{}
	)
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-svc.LostAgents():
			mu.Lock()
			busy := checking[id]
			checking[id] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(checking, id)
					mu.Unlock()
				}()
				svc.CheckAgent(ctx, id)
			})
		}
	}
}
