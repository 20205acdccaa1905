-- 0001: tenants, API keys, sandboxes and their labels.
-- Times are TEXT in UTC, fixed width to the microsecond
-- (2006-01-02T15:04:05.000000Z), so they sort as text.

CREATE TABLE tenants (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL,     -- SHA-256 of the secret
    created_at   TEXT NOT NULL,
    last_used_at TEXT
) STRICT;

CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);

CREATE TABLE sandboxes (
    id         TEXT PRIMARY KEY,   -- ULID: sorts by creation time
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    state      TEXT NOT NULL,
    template   TEXT NOT NULL,
    driver     TEXT NOT NULL,
    env        TEXT,               -- JSON object, NULL when empty
    cwd        TEXT NOT NULL,
    limits     TEXT NOT NULL,      -- JSON api.Limits
    timeout_s  INTEGER NOT NULL,
    handle     BLOB,               -- the driver's opaque handle
    error      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT
) STRICT;

CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, id);
CREATE INDEX sandboxes_tenant_state ON sandboxes (tenant_id, state, id);
CREATE INDEX sandboxes_state ON sandboxes (state, id);

CREATE TABLE sandbox_labels (
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, name)
) STRICT, WITHOUT ROWID;

CREATE INDEX sandbox_labels_pair ON sandbox_labels (name, value, sandbox_id);
