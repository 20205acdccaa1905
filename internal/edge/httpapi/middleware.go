package httpapi

import (
	"net/http"
	"runtime/debug"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// authenticate serves the request as its key: the context carries the
// principal and ends when the key is revoked (auth.Authenticator.Begin),
// so a stream or WebSocket ends with its key. A request another node
// forwarded is served as the key id that node authenticated
// (auth.Authenticator.BeginKey: forward.go). A request without a valid
// key is answered 401; one whose key's role is below least, 403
// <least>_required; one beyond reading by a suspended tenant's key, 403
// tenant_suspended (tenancy.Principal.May).
func (a *API) authenticate(least string, next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, end, err := a.begin(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hutch"`)
			a.writeError(w, r, err)
			return
		}
		defer end()
		p, _ := tenancy.From(ctx)
		if err := p.May(least); err != nil {
			a.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	}
}

// statusRecorder remembers the status a handler wrote, for the log; it
// keeps http.Flusher reachable for streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (a *API) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		a.cfg.Log.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000)
	})
}

func (a *API) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.cfg.Log.Error("panic in handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				a.writeError(w, r, errdefs.New(nil, "internal", "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
