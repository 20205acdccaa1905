-- 0009: the reader role, and who made each key. SQLite cannot change a
-- CHECK, so the table is made again.
--   created_by: the key that created it; '' for the system's keys and the
--     keys from before this migration.
--   lineage: every creator above it, oldest first, as '/id/…/id/' ('/' for
--     none). A cascading revoke follows it, so deleting a key in between
--     cannot hide its descendants from an older ancestor.

CREATE TABLE api_keys_new (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member', 'reader')),
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL,     -- SHA-256 of the secret
    created_by   TEXT NOT NULL DEFAULT '',
    lineage      TEXT NOT NULL DEFAULT '/',
    created_at   TEXT NOT NULL,
    last_used_at TEXT
) STRICT;

INSERT INTO api_keys_new (id, tenant_id, name, role, prefix, hash, created_at, last_used_at)
    SELECT id, tenant_id, name, role, prefix, hash, created_at, last_used_at FROM api_keys;

DROP TABLE api_keys;
ALTER TABLE api_keys_new RENAME TO api_keys;

CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);
