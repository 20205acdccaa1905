package httpapi

import (
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
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
	if _, err := a.cfg.Store.GetSandbox(r.Context(), q.SandboxID); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.answerEvents(w, r, q)
}

// answerEvents answers with a page of the events matching q, or with a
// stream of them when the client accepts text/event-stream
// (events_stream.go).
func (a *API) answerEvents(w http.ResponseWriter, r *http.Request, q store.EventQuery) {
	if wantsSSE(r) {
		a.streamEvents(w, r, q)
		return
	}
	a.writeEvents(w, r, q)
}

func (a *API) writeEvents(w http.ResponseWriter, r *http.Request, q store.EventQuery) {
	evs, next, err := a.cfg.Store.ListEvents(r.Context(), q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := api.EventList{Events: make([]api.Event, 0, len(evs)), NextCursor: next}
	for _, e := range evs {
		out.Events = append(out.Events, eventToAPI(e))
	}
	writeJSON(w, http.StatusOK, out)
}

// eventQuery reads after, type (repeatable) and limit.
func eventQuery(r *http.Request) (store.EventQuery, error) {
	v := r.URL.Query()
	q := store.EventQuery{After: v.Get("after"), Types: v["type"]}
	if err := store.CheckAfter(q.After); err != nil {
		return q, err
	}
	if len(q.Types) > maxTypeFilters {
		return q, errdefs.Invalid("invalid_request", "at most %d type filters", maxTypeFilters)
	}
	for _, t := range q.Types {
		if t == "" || len(t) > store.MaxEventType {
			return q, errdefs.Invalid("invalid_request", "type must be an event type such as %q", api.EventSandboxCreated)
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxLimit {
			return q, errdefs.Invalid("invalid_request", "limit must be a number from 1 to %d", store.MaxLimit)
		}
		q.Limit = n
	}
	return q, nil
}

func eventToAPI(e store.Event) api.Event {
	return api.Event{
		ID:        e.ID,
		SandboxID: e.SandboxID,
		AppID:     e.AppID,
		Type:      e.Type,
		Message:   e.Message,
		Data:      e.Data,
		CreatedAt: e.CreatedAt,
	}
}
