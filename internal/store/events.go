package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
)

// Events keeps each tenant's event log, append-only.
type Events interface {
	// AppendEvent records e in the caller's tenant, setting e.TenantID (the
	// system must set it itself), e.ID and, if zero, e.CreatedAt, and
	// normalising e.Data to what a read returns. The store assigns the ID,
	// whatever e.ID held: IDs increase in the order appends commit, so a
	// reader resuming after the last ID it saw never misses an event. A
	// SandboxID must name a sandbox of the same tenant. Events are never
	// changed; they go only with their tenant or their sandbox's row.
	AppendEvent(ctx context.Context, e *Event) error
	// ListEvents returns a page of the caller's tenant's events matching q,
	// oldest first, and the cursor of the next page: the ID of the page's
	// last event, or "" when the page held every match recorded so far.
	ListEvents(ctx context.Context, q EventQuery) ([]Event, string, error)
	// TrimEvents deletes every tenant's events older than tr.Before (none
	// when zero) and, of each tenant's, all but the newest
	// tr.MaxPerTenant (none when zero), and returns how many it deleted.
	// It deletes in batches of at most TrimBatch events, each its own
	// short write, so appends go on between them. System only: the
	// retention loop.
	TrimEvents(ctx context.Context, tr EventTrim) (int, error)
	// DeleteEventsByTenant deletes every event of tenantID and returns
	// how many, in batches of at most TrimBatch as TrimEvents does. System
	// only: a tenant's deletion, its last step.
	DeleteEventsByTenant(ctx context.Context, tenantID string) (int, error)
}

// Event is one entry of the append-only event log.
type Event struct {
	ID        string // ULID, assigned by AppendEvent
	TenantID  string
	SandboxID string // empty for an event about the tenant
	// AppID marks an event of an app's log (GET /v1/apps/{id}/events).
	AppID   string
	Type    string // api.EventSandboxCreated, …
	Message string // safe to show a user
	// Data holds small details, as JSON: it comes back as encoding/json
	// decodes an object (numbers as float64); empty comes back nil.
	Data      map[string]any
	CreatedAt time.Time
}

// EventQuery filters and pages ListEvents.
type EventQuery struct {
	SandboxID string   // only this sandbox's events, if set
	AppID     string   // only this app's events, if set
	Types     []string // only events of one of these types, if any
	After     string   // only events after this event ID (a cursor)
	Limit     int      // page size: DefaultLimit if <= 0, at most MaxLimit
}

// EventTrim is what TrimEvents deletes.
type EventTrim struct {
	Before       time.Time // events created before it; none if zero
	MaxPerTenant int       // keep each tenant's newest this many; all if <= 0
}

// TrimBatch bounds the events one write of TrimEvents deletes.
const TrimBatch = 1000

// Bounds on one event. Events are a log of what happened, not a place for
// output: the emitters cut messages to MaxEventMessage themselves.
const (
	MaxEventType    = 64
	MaxEventMessage = 4096
	MaxEventData    = 16 << 10 // bytes of Data as JSON
)

// CheckEvent validates e and normalises it in place so that it equals what
// a read returns: CreatedAt in UTC to Precision (now if zero), Data passed
// through JSON (nil when empty). It returns Data as the JSON to store, nil
// for none. The ID is not checked: AppendEvent assigns it.
func CheckEvent(e *Event) ([]byte, error) {
	if e.TenantID == "" {
		return nil, errdefs.Invalid("invalid_event", "an event needs a tenant")
	}
	if e.Type == "" || len(e.Type) > MaxEventType {
		return nil, errdefs.Invalid("invalid_event", "an event's type must be 1-%d bytes", MaxEventType)
	}
	if len(e.Message) > MaxEventMessage {
		return nil, errdefs.Invalid("invalid_event", "an event's message must be at most %d bytes", MaxEventMessage)
	}
	e.CreatedAt = orNow(e.CreatedAt)
	if len(e.Data) == 0 {
		e.Data = nil
		return nil, nil
	}
	b, err := json.Marshal(e.Data)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "invalid_event", err, "an event's data must be JSON")
	}
	if len(b) > MaxEventData {
		return nil, errdefs.Invalid("invalid_event", "an event's data must be at most %d bytes of JSON", MaxEventData)
	}
	data, err := DecodeEventData(b)
	if err != nil {
		return nil, err
	}
	e.Data = data
	return b, nil
}

// DecodeEventData is how every implementation reads Data back: nil for
// none or an empty object.
func DecodeEventData(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("event data: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// CheckAfter validates an EventQuery.After: empty, or an event ID.
func CheckAfter(after string) error {
	if after != "" && !ids.Valid(after) {
		return errdefs.Invalid("invalid_cursor", "after must be the id of an event, as a page's next_cursor or an event's id")
	}
	return nil
}

// NextEventID returns a new event ID greater than last, the greatest ID
// already stored ("" when there is none). It is a fresh ULID when the clock
// has moved past last's, else last plus one: ULIDs made in the same
// millisecond are random in their low bits, so without this an event could
// sort before one recorded earlier and a reader resuming after that one
// would skip it. Implementations call it inside the write that inserts the
// event, so IDs increase in commit order.
func NextEventID(last string) string {
	id := ids.New()
	if id > last {
		return id
	}
	return successor(last)
}

// successor adds one to a ULID's 26 base32 digits. It carries into the
// time part only after 2^80 IDs in one millisecond, so it never runs out
// before the year 10889.
func successor(id string) string {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // ids' alphabet
	b := []byte(id)
	for i := len(b) - 1; i > 0; i-- {
		d := strings.IndexByte(alphabet, b[i])
		if d < len(alphabet)-1 {
			b[i] = alphabet[d+1]
			return string(b)
		}
		b[i] = alphabet[0]
	}
	panic("store: no event id after " + id)
}
