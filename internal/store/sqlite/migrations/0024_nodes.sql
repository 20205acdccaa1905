-- 0024: the nodes of a fleet and the leases of its fleet-wide work
-- (store.Nodes, store.Leases). One SQLite file serves one process, so
-- this store has one node and its leases are always its own; the tables
-- keep the contract the same as Postgres's.
--   nodes.drivers: a JSON array of names; labels: a JSON object, NULL
--     when empty; the load's columns are as last reported.
--   state: the operator's (active, draining); lost is read from the
--     heartbeat's age, never stored.
CREATE TABLE nodes (
    name                   TEXT PRIMARY KEY,
    advertise              TEXT NOT NULL,
    drivers                TEXT NOT NULL CHECK (json_valid(drivers)),
    labels                 TEXT CHECK (labels IS NULL OR json_valid(labels)),
    cpus                   REAL NOT NULL DEFAULT 0,
    memory_bytes           INTEGER NOT NULL DEFAULT 0,
    committed_memory_bytes INTEGER NOT NULL DEFAULT 0,
    running                INTEGER NOT NULL DEFAULT 0,
    state                  TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining')),
    drain_deadline         TEXT,
    started_at             TEXT NOT NULL,
    heartbeat_at           TEXT NOT NULL
) STRICT;

-- A lease is held by holder until expires_at; an expired row is free
-- for the next to ask.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
) STRICT;
