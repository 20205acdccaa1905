-- 0004: secrets, sealed by internal/secrets. No plaintext is stored: the
-- value is AES-256-GCM ciphertext (tag appended) under a random 12-byte
-- nonce, with additional data binding it to its tenant and name, so a
-- ciphertext copied to another row or tenant does not open.
--
-- key_id names the master key that sealed the value (a fingerprint, not
-- the key). Rotation is not built yet; it will keep several keys by id,
-- open with the row's and re-seal under the newest, row by row.

CREATE TABLE secrets (
    id          TEXT PRIMARY KEY,  -- ULID
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT NOT NULL,
    value_bytes INTEGER NOT NULL,  -- the plaintext's length
    key_id      TEXT NOT NULL,
    nonce       BLOB NOT NULL,
    ciphertext  BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (tenant_id, name)
) STRICT;
