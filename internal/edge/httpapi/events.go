package httpapi

import (
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/events"
)

// maxTypeFilters bounds the type parameters of one event listing.
const maxTypeFilters = 32

// listEvents is GET /v1/events: the caller's tenant's whole log, or one
// sandbox's with sandbox=. An unknown sandbox there is an empty page, not
// a 404: the filter only narrows the log. With Accept: text/event-stream
// it streams instead.
func (a *API) listEvents(w http.ResponseWriter, r *http.Request) {
	q, err := eventQuery(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	q.SandboxID = r.URL.Query().Get("sandbox")
	a.answerEvents(w, r, q)
}

// listSandboxEvents is GET /v1/sandboxes/{id}/events. An unknown sandbox,
// or another tenant's, is 404 sandbox_not_found; a destroyed sandbox keeps
// its record, so its events stay readable. With Accept: text/event-stream
// it streams instead.
func (a *API) listSandboxEvents(w http.ResponseWriter, r *http.Request) {
	q, err := eventQuery(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	q.SandboxID = r.PathValue("id")
	if err := a.cfg.Sandboxes.Check(r.Context(), q.SandboxID); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.answerEvents(w, r, q)
}

// answerEvents answers with a page of the events matching q, or with a
// stream of them when the client accepts text/event-stream
// (events_stream.go).
func (a *API) answerEvents(w http.ResponseWriter, r *http.Request, q events.Query) {
	if wantsSSE(r) {
		a.streamEvents(w, r, q)
		return
	}
	a.writeEvents(w, r, q)
}

func (a *API) writeEvents(w http.ResponseWriter, r *http.Request, q events.Query) {
	page, err := a.cfg.Events.List(r.Context(), q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// eventQuery reads after, type (repeatable) and limit.
func eventQuery(r *http.Request) (events.Query, error) {
	v := r.URL.Query()
	q := events.Query{After: v.Get("after"), Types: v["type"]}
	if err := events.CheckAfter(q.After); err != nil {
		return q, err
	}
	if len(q.Types) > maxTypeFilters {
		return q, errdefs.Invalid("invalid_request", "at most %d type filters", maxTypeFilters)
	}
	for _, t := range q.Types {
		if t == "" || len(t) > events.MaxType {
			return q, errdefs.Invalid("invalid_request", "type must be an event type such as %q", api.EventSandboxCreated)
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > events.MaxLimit {
			return q, errdefs.Invalid("invalid_request", "limit must be a number from 1 to %d", events.MaxLimit)
		}
		q.Limit = n
	}
	return q, nil
}
