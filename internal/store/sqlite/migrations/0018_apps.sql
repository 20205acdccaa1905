-- 0018: apps. An app's name is its host label, so it is unique on the
-- server, not only in its tenant. live and dev name the sandboxes its two
-- roles serve; generation grows with each change of them, so a swap is
-- conditional on the pointers it read.

CREATE TABLE apps (
    id            TEXT PRIMARY KEY,  -- ULID
    tenant_id     TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name          TEXT NOT NULL UNIQUE,
    preset        TEXT NOT NULL,
    template      TEXT NOT NULL,
    public        INTEGER NOT NULL,
    state         TEXT NOT NULL,
    error         TEXT NOT NULL,
    live          TEXT NOT NULL,
    dev           TEXT NOT NULL,
    previous_live TEXT NOT NULL,
    generation    INTEGER NOT NULL,
    limits        TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;
CREATE INDEX apps_tenant ON apps (tenant_id, name);

-- Config values: a sensitive one only sealed (internal/secrets), a plain
-- one as it is.
CREATE TABLE app_config (
    app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    sensitive  INTEGER NOT NULL,
    key_id     TEXT NOT NULL,
    nonce      BLOB,
    ciphertext BLOB,
    access     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (app_id, key)
) STRICT;

-- Tasks: the API's record as JSON beside the columns queries need. At
-- most one task per app is queued or running, checked in the write that
-- adds one.
CREATE TABLE app_tasks (
    id         TEXT PRIMARY KEY,
    app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    status     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX app_tasks_app ON app_tasks (app_id, id);

-- A task's log, in numbered chunks: the SSE id a client resumes after.
CREATE TABLE app_task_log (
    task_id TEXT NOT NULL REFERENCES app_tasks (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) STRICT;

-- An app's events are the event log's, marked with the app.
ALTER TABLE events ADD COLUMN app_id TEXT REFERENCES apps (id) ON DELETE CASCADE;
CREATE INDEX events_tenant_app ON events (tenant_id, app_id, id);
