-- 0003: the nodes of a fleet and the leases of its fleet-wide work
-- (store.Nodes, store.Leases). Every time here is written as now(), the
-- database's clock, and every age and expiry is judged against it, so
-- nodes whose clocks disagree agree on who is alive and who holds what.
--   drivers: a JSON array of names; labels: a JSON object, NULL when
--     empty; the load's columns are as last reported.
--   state: the operator's (active, draining); lost is read from the
--     heartbeat's age, never stored.
CREATE TABLE nodes (
    name                   text COLLATE "C" PRIMARY KEY,
    advertise              text NOT NULL,
    drivers                jsonb NOT NULL,
    labels                 jsonb,
    cpus                   double precision NOT NULL DEFAULT 0,
    memory_bytes           bigint NOT NULL DEFAULT 0,
    committed_memory_bytes bigint NOT NULL DEFAULT 0,
    running                bigint NOT NULL DEFAULT 0,
    state                  text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining')),
    drain_deadline         timestamptz,
    started_at             timestamptz NOT NULL,
    heartbeat_at           timestamptz NOT NULL
);

-- A lease is held by holder until expires_at; an expired row is free
-- for the next to ask.
CREATE TABLE leases (
    name        text COLLATE "C" PRIMARY KEY,
    holder      text COLLATE "C" NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
