package telemetry

import (
	"cmp"
	"net/http"
	"strconv"
	"time"
)

// unmatched is the route label of a request no route took.
const unmatched = "unmatched"

// Route measures the requests next serves as one route of the API's
// table, labelled with the route's method and pattern as given (never the
// request's path) and the status written. A long route (a stream, a
// transfer, a command) is measured to its status line and observed then:
// its whole life is the caller's to choose, so an event stream open for an
// hour counts its setup, and a run-to-completion exec, which answers when
// its command exits, the command's run. Any other route is measured to the
// handler's return. A nil Metrics returns next.
func (m *Metrics) Route(method, pattern string, long bool, next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, pattern, method, long, next)
	})
}

// Unmatched measures the requests next answers for no route (404
// unknown_route, 405 method_not_allowed) as the route "unmatched", with
// their method when it is a standard one and "other" when not. A nil
// Metrics returns next.
func (m *Metrics) Unmatched(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, unmatched, standardMethod(r.Method), false, next)
	})
}

func (m *Metrics) serve(w http.ResponseWriter, r *http.Request, route, method string, long bool, next http.Handler) {
	rec := &recorder{ResponseWriter: w, start: time.Now()}
	if long {
		rec.observe = func(status int, d time.Duration) { m.observeRequest(route, method, status, d) }
	}
	next.ServeHTTP(rec, r)
	if long && rec.status != 0 {
		return // observed at its status line
	}
	// Nothing written is net/http's 200.
	m.observeRequest(route, method, cmp.Or(rec.status, http.StatusOK), time.Since(rec.start))
}

func (m *Metrics) observeRequest(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Observe(d.Seconds())
}

// recorder keeps the status a handler writes first and, when observe is
// set, reports it with the time it took as it is written. It keeps the writer's other abilities (flush, hijack, deadlines)
// reachable through Unwrap, for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	start   time.Time
	status  int
	observe func(status int, d time.Duration)
}

func (rec *recorder) WriteHeader(code int) {
	rec.wrote(code)
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(p []byte) (int, error) {
	rec.wrote(http.StatusOK)
	return rec.ResponseWriter.Write(p)
}

func (rec *recorder) wrote(code int) {
	if rec.status != 0 {
		return
	}
	rec.status = code
	if rec.observe != nil {
		rec.observe(code, time.Since(rec.start))
	}
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// standardMethod is method when it is one of HTTP's, "other" when not: a
// request for no route may carry any token as its method.
func standardMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}
