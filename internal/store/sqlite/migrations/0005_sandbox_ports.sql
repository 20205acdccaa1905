-- 0005: how the router exposes a sandbox's ports. A port without a row is
-- private; public ports answer without credentials.

CREATE TABLE sandbox_ports (
    sandbox_id TEXT NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    port       INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    public     INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, port)
) STRICT, WITHOUT ROWID;
