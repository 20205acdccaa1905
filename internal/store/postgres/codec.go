package postgres

import (
	"encoding/json"
	"fmt"
)

// jsonArg is v as JSON for a jsonb column; nil (NULL) for a nil pointer.
func jsonArg[T any](v *T) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// mapArg is m as a JSON object, nil (NULL) when empty.
func mapArg(m map[string]string) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return json.Marshal(m)
}

// decodeMap returns nil for NULL and for an empty object.
func decodeMap(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stored map: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// decodeJSON unmarshals a stored JSON column into v, what naming it for
// an error.
func decodeJSON(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("stored %s: %w", what, err)
	}
	return nil
}
