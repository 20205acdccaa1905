-- 0013: volumes, a tenant's named directories that sandboxes mount and
-- that outlive them; their files are on disk under <data>/volumes/<id>.
-- A sandbox lists the volumes it mounts (a JSON array of api.VolumeMount),
-- so deleting a volume a sandbox still mounts is refused in the same
-- transaction.

CREATE TABLE volumes (
    id            TEXT PRIMARY KEY,  -- ULID
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    size_mb       INTEGER NOT NULL CHECK (size_mb > 0),
    size_enforced INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (tenant_id, name)
) STRICT;

ALTER TABLE sandboxes ADD COLUMN volumes TEXT;
