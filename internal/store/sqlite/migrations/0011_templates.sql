-- 0011: templates, the images sandboxes start from. The layers themselves
-- are unpacked once into the layer store on disk, shared by every
-- template that names them; a row names them by diff id (a JSON array,
-- bottom first), so the store's garbage collection keeps every layer some
-- row names. flat names a flattened copy of the whole image where the
-- host cannot share layers (hutch without root).

CREATE TABLE templates (
    id          TEXT PRIMARY KEY,  -- ULID
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    source      TEXT NOT NULL,
    digest      TEXT NOT NULL,
    config      TEXT NOT NULL,     -- api.ImageConfig as JSON
    layers      TEXT NOT NULL,     -- JSON array of diff ids
    bytes       INTEGER NOT NULL CHECK (bytes >= 0),
    flat        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (tenant_id, name)
) STRICT;

CREATE INDEX sandboxes_template ON sandboxes (tenant_id, template);
