package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
)

// Streams the API serves from the store (events, a task's log) hold a
// place in their tenant's quota of streams for as long as they are open;
// those of a sandbox (output, logs, watches) take theirs at the sandbox
// service's door.

// streamRetryAfter is the Retry-After of a 429 for a stream or a watch:
// the same request succeeds once one of the tenant's ends.
const streamRetryAfter = 5 * time.Second

// holdStream takes the caller's tenant's place for one more stream, or
// answers 429 quota_exceeded with Retry-After and returns false. The
// caller calls release when the stream ends.
func (a *API) holdStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	p, _ := tenancy.From(r.Context())
	release, err := a.cfg.Quotas.Open(r.Context(), p.TenantID, quota.Stream)
	if err != nil {
		if errdefs.HasCode(err, "quota_exceeded") {
			w.Header().Set("Retry-After", strconv.Itoa(int(streamRetryAfter/time.Second)))
		}
		a.writeError(w, r, err)
		return nil, false
	}
	return release, true
}
