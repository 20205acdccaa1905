package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// timeLayout is fixed width so that stored times sort as text; the store
// keeps microseconds (store.Precision) and always UTC.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string {
	return store.Time(t).Format(timeLayout)
}

// ParseTime reads a time as this store keeps it (UTC text, fixed width
// to the microsecond), for a reader of the file beside the store: hutch
// store migrate (internal/store/migrate).
func ParseTime(s string) (time.Time, error) { return parseTime(s) }

func parseTime(s string) (time.Time, error) {
	t, err := time.ParseInLocation(timeLayout, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

func formatTimePtr(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(*t), Valid: true}
}

func parseTimePtr(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// encodeMap stores an empty map as NULL.
func encodeMap(m map[string]string) (sql.NullString, error) {
	if len(m) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// decodeMap returns nil for NULL and for an empty object.
func decodeMap(s sql.NullString) (map[string]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		return nil, fmt.Errorf("stored map: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}
