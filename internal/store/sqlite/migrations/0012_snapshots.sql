-- 0012: snapshots, captured copies of a sandbox's files, owned by its
-- tenant and outliving the sandbox (no foreign key to it). The files are
-- on disk under <data>/snapshots/<id>; template and driver say what they
-- are a copy over, so a sandbox started from one has the same root.

CREATE TABLE snapshots (
    id          TEXT PRIMARY KEY,  -- ULID
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    sandbox_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    template    TEXT NOT NULL,
    driver      TEXT NOT NULL,
    bytes       INTEGER NOT NULL CHECK (bytes >= 0),
    files       INTEGER NOT NULL CHECK (files >= 0),
    pause_ms    INTEGER NOT NULL CHECK (pause_ms >= 0),
    created_at  TEXT NOT NULL
) STRICT;

CREATE INDEX snapshots_tenant ON snapshots (tenant_id, created_at);
CREATE INDEX snapshots_template ON snapshots (tenant_id, template);
