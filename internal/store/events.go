package store

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
)

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
