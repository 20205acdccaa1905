package store

import (
	"encoding/base64"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Cursors of ListSandboxes are opaque to callers. Inside they name the last
// sandbox of the previous page; pages are ordered by id, and ids are ULIDs,
// so that is time order and stable under inserts.

const cursorPrefix = "v1:"

// EncodeCursor returns the cursor of the page after the sandbox id.
func EncodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// DecodeCursor returns the sandbox id inside a cursor EncodeCursor made.
func DecodeCursor(cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) > 256 {
		return "", errdefs.Invalid("invalid_cursor", "the cursor is not one this server returned")
	}
	id, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok || id == "" {
		return "", errdefs.Invalid("invalid_cursor", "the cursor is not one this server returned")
	}
	return id, nil
}
