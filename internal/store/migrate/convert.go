package migrate

import (
	"encoding/json"
	"fmt"

	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// convert returns the SQLite value v (int64, float64, string, []byte or
// nil, as the driver gives it) as the Go value pgx writes into a
// Postgres column of type typ (information_schema's data_type), as the
// two stores write the same record: a time from the SQLite store's text
// (sqlite.ParseTime) to a time.Time, a 0/1 integer to a boolean, JSON
// text to the JSON itself, a blob to bytea. NULL stays NULL. A type or
// value the stores never write is an error, not a guess.
func convert(typ string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case "text":
		if s, ok := v.(string); ok {
			return s, nil
		}
	case "bigint", "integer":
		if n, ok := v.(int64); ok {
			return n, nil
		}
	case "double precision":
		switch n := v.(type) {
		case float64:
			return n, nil
		case int64:
			return float64(n), nil
		}
	case "boolean":
		if n, ok := v.(int64); ok && (n == 0 || n == 1) {
			return n == 1, nil
		}
	case "bytea":
		switch b := v.(type) {
		case []byte:
			return b, nil
		case string:
			return []byte(b), nil
		}
	case "timestamp with time zone":
		if s, ok := v.(string); ok {
			return sqlite.ParseTime(s)
		}
	case "json", "jsonb":
		if s, ok := v.(string); ok {
			if !json.Valid([]byte(s)) {
				return nil, fmt.Errorf("stored JSON is not valid: %.40q", s)
			}
			// Raw: json keeps it as written (settings), jsonb as
			// Postgres normalises any JSON the store writes.
			return json.RawMessage(s), nil
		}
	default:
		return nil, fmt.Errorf("postgres column type %q: the migration does not convert it (convert.go)", typ)
	}
	return nil, fmt.Errorf("a %T where the postgres column is %s", v, typ)
}
