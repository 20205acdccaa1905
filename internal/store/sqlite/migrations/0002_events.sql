-- 0002: the append-only event log.
-- ids are ULIDs assigned in commit order (store.NextEventID), so ORDER BY id
-- is the order events were recorded and "id > ?" resumes a reader.

CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- NULL for an event about the tenant; its events go with the sandbox's row.
    sandbox_id TEXT REFERENCES sandboxes (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    message    TEXT NOT NULL,
    data       TEXT,               -- JSON object, NULL when empty
    created_at TEXT NOT NULL
) STRICT;

-- One sandbox's events, and the whole tenant's, both in id order.
CREATE INDEX events_tenant_sandbox ON events (tenant_id, sandbox_id, id);
CREATE INDEX events_tenant ON events (tenant_id, id);
