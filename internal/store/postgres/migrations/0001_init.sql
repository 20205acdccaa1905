-- 0001: the schema of SQLite's migrations 0001-0023 as one, for Postgres.
-- Times are timestamptz (microseconds, as store.Precision). JSON that the
-- store only reads back is jsonb; a setting is json, kept as written.
-- Every text that is ordered or compared by range (ids, names, keys) is
-- COLLATE "C", so it sorts by bytes as SQLite does, whatever the
-- database's locale.

-- Tenants own everything else. A tenant's row outlives its deletion as
-- the record of it (deletion: api.TenantDeletion). Quotas: NULL follows
-- the server's default (hutch serve --tenant-*), 0 is no limit.
CREATE TABLE tenants (
    id                 text COLLATE "C" PRIMARY KEY,
    name               text COLLATE "C" NOT NULL UNIQUE,
    created_at         timestamptz NOT NULL,
    quota_cpu          double precision CHECK (quota_cpu >= 0),
    quota_sandboxes    bigint CHECK (quota_sandboxes >= 0),
    quota_memory_mb    bigint CHECK (quota_memory_mb >= 0),
    quota_pids         bigint CHECK (quota_pids >= 0),
    quota_disk_mb      bigint CHECK (quota_disk_mb >= 0),
    quota_snapshots    bigint CHECK (quota_snapshots >= 0),
    quota_snapshots_mb bigint CHECK (quota_snapshots_mb >= 0),
    quota_volumes      bigint CHECK (quota_volumes >= 0),
    quota_volumes_mb   bigint CHECK (quota_volumes_mb >= 0),
    quota_templates    bigint CHECK (quota_templates >= 0),
    quota_templates_mb bigint CHECK (quota_templates_mb >= 0),
    quota_apps         bigint CHECK (quota_apps >= 0),
    quota_keys         bigint CHECK (quota_keys >= 0),
    quota_secrets      bigint CHECK (quota_secrets >= 0),
    quota_watches      bigint CHECK (quota_watches >= 0),
    quota_streams      bigint CHECK (quota_streams >= 0),
    state              text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'suspended', 'deleting', 'deleted')),
    deletion           jsonb
);

-- API keys, stored hashed.
--   created_by: the key that created it; '' for the system's keys.
--   lineage: every creator above it, oldest first, as '/id/…/id/' ('/'
--     for none). A cascading revoke follows it, so deleting a key in
--     between cannot hide its descendants from an older ancestor.
CREATE TABLE api_keys (
    id           text COLLATE "C" PRIMARY KEY,
    tenant_id    text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text NOT NULL,
    role         text NOT NULL CHECK (role IN ('admin', 'member', 'reader')),
    prefix       text NOT NULL,
    hash         bytea NOT NULL,    -- SHA-256 of the secret
    created_by   text COLLATE "C" NOT NULL DEFAULT '',
    lineage      text COLLATE "C" NOT NULL DEFAULT '/',
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, id);

-- Sandboxes. labels is a JSON object (NULL when empty), found through
-- its GIN index; rev is the record's revision (store.Sandbox.Rev), given
-- from sandbox_clock.
CREATE TABLE sandboxes (
    id              text COLLATE "C" PRIMARY KEY,  -- ULID: sorts by creation time
    tenant_id       text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    state           text NOT NULL,
    template        text COLLATE "C" NOT NULL,
    driver          text COLLATE "C" NOT NULL,
    env             jsonb,                -- NULL when empty
    cwd             text NOT NULL,
    limits          jsonb NOT NULL,       -- api.Limits
    timeout_s       bigint NOT NULL,
    handle          bytea,                -- the driver's opaque handle
    error           text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    root            boolean NOT NULL DEFAULT false,
    network         jsonb NOT NULL,       -- api.NetworkPolicy
    node            text COLLATE "C" NOT NULL DEFAULT '',
    volumes         jsonb,                -- [api.VolumeMount], NULL when none
    on_expiry       text NOT NULL DEFAULT '',
    paused_at       timestamptz,
    idle_timeout_s  bigint NOT NULL DEFAULT 0 CHECK (idle_timeout_s >= 0),
    keepalive_until timestamptz,
    disk_bytes      bigint NOT NULL DEFAULT 0 CHECK (disk_bytes >= 0),
    rev             bigint NOT NULL DEFAULT 0,
    labels          jsonb                 -- NULL when none
);
CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, id);
CREATE INDEX sandboxes_tenant_state ON sandboxes (tenant_id, state, id);
CREATE INDEX sandboxes_state ON sandboxes (state, id);
CREATE INDEX sandboxes_template ON sandboxes (tenant_id, template);
CREATE INDEX sandboxes_rev ON sandboxes (rev);
CREATE INDEX sandboxes_labels ON sandboxes USING gin (labels jsonb_path_ops);

-- The last revision given to a sandbox's record. Every write of a record
-- takes the next in an UPDATE of this one row as its last statement, so
-- the row's lock orders the writes: revisions grow in commit order.
CREATE TABLE sandbox_clock (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    rev bigint NOT NULL
);
INSERT INTO sandbox_clock (rev) VALUES (0);

-- How the router exposes a sandbox's ports; a port without a row is
-- private.
CREATE TABLE sandbox_ports (
    sandbox_id text COLLATE "C" NOT NULL REFERENCES sandboxes (id) ON DELETE CASCADE,
    tenant_id  text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    port       integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    public     boolean NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (sandbox_id, port)
);

-- Secrets, sealed by internal/control/secrets: no plaintext is stored.
CREATE TABLE secrets (
    id          text COLLATE "C" PRIMARY KEY,
    tenant_id   text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text COLLATE "C" NOT NULL,
    description text NOT NULL,
    kind        text NOT NULL DEFAULT 'env',
    registry    text NOT NULL DEFAULT '',
    value_bytes bigint NOT NULL,   -- the plaintext's length
    key_id      text COLLATE "C" NOT NULL,
    nonce       bytea NOT NULL,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    UNIQUE (tenant_id, name)
);

-- Templates: their layers are on disk, shared; a row names them by diff
-- id (a JSON array, bottom first).
CREATE TABLE templates (
    id         text COLLATE "C" PRIMARY KEY,
    tenant_id  text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text COLLATE "C" NOT NULL,
    source     text NOT NULL,
    digest     text NOT NULL,
    config     jsonb NOT NULL,     -- api.ImageConfig
    layers     jsonb NOT NULL,
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    flat       text NOT NULL,
    created_at timestamptz NOT NULL,
    base       text NOT NULL DEFAULT '',
    UNIQUE (tenant_id, name)
);

-- Snapshots outlive their sandbox (no foreign key to it).
CREATE TABLE snapshots (
    id         text COLLATE "C" PRIMARY KEY,
    tenant_id  text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    sandbox_id text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    template   text COLLATE "C" NOT NULL,
    driver     text NOT NULL,
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    files      bigint NOT NULL CHECK (files >= 0),
    pause_ms   bigint NOT NULL CHECK (pause_ms >= 0),
    created_at timestamptz NOT NULL
);
CREATE INDEX snapshots_tenant ON snapshots (tenant_id, created_at);
CREATE INDEX snapshots_template ON snapshots (tenant_id, template);

-- Volumes: a tenant's named directories that sandboxes mount.
CREATE TABLE volumes (
    id            text COLLATE "C" PRIMARY KEY,
    tenant_id     text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name          text COLLATE "C" NOT NULL,
    size_mb       bigint NOT NULL CHECK (size_mb > 0),
    size_enforced boolean NOT NULL,
    created_at    timestamptz NOT NULL,
    UNIQUE (tenant_id, name)
);

-- The settings an admin changed, one row per key, each value as the JSON
-- written.
CREATE TABLE settings (
    key        text COLLATE "C" PRIMARY KEY,
    value      json NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Apps: a name is a host label, unique on the server.
CREATE TABLE apps (
    id            text COLLATE "C" PRIMARY KEY,
    tenant_id     text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name          text COLLATE "C" NOT NULL UNIQUE,
    preset        text NOT NULL,
    template      text NOT NULL,
    public        boolean NOT NULL,
    state         text NOT NULL,
    error         text NOT NULL,
    live          text NOT NULL,
    dev           text NOT NULL,
    previous_live text NOT NULL,
    generation    bigint NOT NULL,
    limits        jsonb,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX apps_tenant ON apps (tenant_id, name);

CREATE TABLE app_config (
    app_id     text COLLATE "C" NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    key        text COLLATE "C" NOT NULL,
    value      text NOT NULL,
    sensitive  boolean NOT NULL,
    key_id     text NOT NULL,
    nonce      bytea,
    ciphertext bytea,
    access     text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, key)
);

-- Tasks: the API's record as JSON beside the columns queries need; seq is
-- the order they were stored (ids made in one millisecond are random in
-- their low bits).
CREATE TABLE app_tasks (
    id         text COLLATE "C" PRIMARY KEY,
    app_id     text COLLATE "C" NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    status     text NOT NULL,
    body       jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    seq        bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX app_tasks_app ON app_tasks (app_id, seq);

CREATE TABLE app_task_log (
    task_id text COLLATE "C" NOT NULL REFERENCES app_tasks (id) ON DELETE CASCADE,
    seq     bigint NOT NULL,
    data    bytea NOT NULL,
    PRIMARY KEY (task_id, seq)
);

-- The append-only event log. ids are ULIDs given in commit order
-- (event_clock), so ORDER BY id is the order events were recorded and
-- "id > $1" resumes a reader.
CREATE TABLE events (
    id         text COLLATE "C" PRIMARY KEY,
    tenant_id  text COLLATE "C" NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- NULL for an event about the tenant; its events go with the sandbox's row.
    sandbox_id text COLLATE "C" REFERENCES sandboxes (id) ON DELETE CASCADE,
    app_id     text COLLATE "C" REFERENCES apps (id) ON DELETE CASCADE,
    type       text NOT NULL,
    message    text NOT NULL,
    data       jsonb,              -- NULL when empty
    created_at timestamptz NOT NULL
);
CREATE INDEX events_tenant_sandbox ON events (tenant_id, sandbox_id, id);
CREATE INDEX events_tenant ON events (tenant_id, id);
CREATE INDEX events_tenant_app ON events (tenant_id, app_id, id);
CREATE INDEX events_created ON events (created_at);

-- The last event id given. An append reads it FOR UPDATE, inserts its
-- event with the next (store.NextEventID) and writes that back: appends
-- hold the row's lock until they commit, so ids grow in commit order and
-- a reader past an id never misses one committed later.
CREATE TABLE event_clock (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    last text COLLATE "C" NOT NULL
);
INSERT INTO event_clock (last) VALUES ('');

-- What each tenant's and each node's sandboxes hold (store.SandboxShare),
-- changed in the same transaction as the sandbox record.
CREATE TABLE tenant_usage (
    tenant_id  text COLLATE "C" PRIMARY KEY,
    sandboxes  bigint NOT NULL,
    memory_mb  bigint NOT NULL,
    cpu_milli  bigint NOT NULL,
    pids       bigint NOT NULL,
    disk_bytes bigint NOT NULL
);

CREATE TABLE node_usage (
    node      text COLLATE "C" PRIMARY KEY,
    memory_mb bigint NOT NULL,
    cpu_milli bigint NOT NULL,
    pids      bigint NOT NULL
);

-- Only an active tenant gets anything new: this trigger refuses, in the
-- insert that would add it, a key, sandbox, snapshot, template, volume,
-- secret or app of a tenant in any other state, and (called with
-- 'events') an event of a deleted one. It reads the tenant FOR SHARE,
-- which a change of the tenant's state (an UPDATE) waits for and which
-- waits for one in flight: an insert that races a suspension or a
-- deletion either commits before it, so the suspension or deletion,
-- listing after its own write, finds what it made, or is refused. The
-- store maps the messages to 403 tenant_suspended and tenant_deleted. A
-- missing tenant is left to the foreign key.
CREATE FUNCTION tenant_takes_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    SELECT state INTO st FROM tenants WHERE id = NEW.tenant_id FOR SHARE;
    IF st IS NULL OR st = 'active' OR (TG_ARGV[0] = 'events' AND st <> 'deleted') THEN
        RETURN NEW;
    END IF;
    IF st = 'suspended' THEN
        RAISE EXCEPTION 'tenant_suspended';
    END IF;
    RAISE EXCEPTION 'tenant_deleted';
END
$$;

CREATE TRIGGER api_keys_tenant_active BEFORE INSERT ON api_keys
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER sandboxes_tenant_active BEFORE INSERT ON sandboxes
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER snapshots_tenant_active BEFORE INSERT ON snapshots
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER templates_tenant_active BEFORE INSERT ON templates
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER volumes_tenant_active BEFORE INSERT ON volumes
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER secrets_tenant_active BEFORE INSERT ON secrets
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER apps_tenant_active BEFORE INSERT ON apps
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('rows');
CREATE TRIGGER events_tenant_deleted BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION tenant_takes_rows('events');
