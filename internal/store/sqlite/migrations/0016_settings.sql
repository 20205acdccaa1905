-- 0016: the lifecycle settings an admin changed (PATCH /v1/settings),
-- server-wide: one row per key (api.Settings' JSON name), its value as
-- JSON. A row wins over hutch serve's flag for that key; a key without a
-- row follows the flag. One row per key, not one document, so a PATCH
-- writes only the keys it changes and each keeps when it was set.

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL CHECK (json_valid(value)),
    updated_at TEXT NOT NULL
) STRICT;
