-- 0020: a tenant's quotas on what it holds besides sandboxes, as an admin
-- set them (NULL follows the server's default, hutch serve --tenant-*; 0
-- is no limit).

ALTER TABLE tenants ADD COLUMN quota_snapshots INTEGER CHECK (quota_snapshots >= 0);
ALTER TABLE tenants ADD COLUMN quota_snapshots_mb INTEGER CHECK (quota_snapshots_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_volumes INTEGER CHECK (quota_volumes >= 0);
ALTER TABLE tenants ADD COLUMN quota_volumes_mb INTEGER CHECK (quota_volumes_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_templates INTEGER CHECK (quota_templates >= 0);
ALTER TABLE tenants ADD COLUMN quota_templates_mb INTEGER CHECK (quota_templates_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_apps INTEGER CHECK (quota_apps >= 0);
ALTER TABLE tenants ADD COLUMN quota_keys INTEGER CHECK (quota_keys >= 0);
ALTER TABLE tenants ADD COLUMN quota_secrets INTEGER CHECK (quota_secrets >= 0);
ALTER TABLE tenants ADD COLUMN quota_watches INTEGER CHECK (quota_watches >= 0);
ALTER TABLE tenants ADD COLUMN quota_streams INTEGER CHECK (quota_streams >= 0);

-- What a sandbox's files took when last measured.
ALTER TABLE sandboxes ADD COLUMN disk_bytes INTEGER NOT NULL DEFAULT 0 CHECK (disk_bytes >= 0);

-- What each tenant's and each node's sandboxes hold (store.SandboxShare),
-- changed in the same write as the sandbox record, so admission reads
-- one row whatever the number of sandboxes. cpu_milli is thousandths of a
-- core. A sandbox is placed in every state but destroyed and failed; it
-- holds its limits in creating, starting, running, paused, stopping and
-- destroying; its files count until it is destroyed.
CREATE TABLE tenant_usage (
    tenant_id  TEXT PRIMARY KEY,
    sandboxes  INTEGER NOT NULL,
    memory_mb  INTEGER NOT NULL,
    cpu_milli  INTEGER NOT NULL,
    pids       INTEGER NOT NULL,
    disk_bytes INTEGER NOT NULL
) STRICT;

CREATE TABLE node_usage (
    node      TEXT PRIMARY KEY,
    memory_mb INTEGER NOT NULL,
    cpu_milli INTEGER NOT NULL,
    pids      INTEGER NOT NULL
) STRICT;

INSERT INTO tenant_usage (tenant_id, sandboxes, memory_mb, cpu_milli, pids, disk_bytes)
SELECT tenant_id,
       sum(state IN ('stopped', 'creating', 'starting', 'running', 'paused', 'stopping', 'destroying')),
       sum(CASE WHEN state IN ('creating', 'starting', 'running', 'paused', 'stopping', 'destroying')
                THEN coalesce(json_extract(limits, '$.memory_mb'), 0) ELSE 0 END),
       sum(CASE WHEN state IN ('creating', 'starting', 'running', 'paused', 'stopping', 'destroying')
                THEN CAST(round(coalesce(json_extract(limits, '$.cpu'), 0) * 1000) AS INTEGER) ELSE 0 END),
       sum(CASE WHEN state IN ('creating', 'starting', 'running', 'paused', 'stopping', 'destroying')
                THEN coalesce(json_extract(limits, '$.pids'), 0) ELSE 0 END),
       0
FROM sandboxes GROUP BY tenant_id;

INSERT INTO node_usage (node, memory_mb, cpu_milli, pids)
SELECT node,
       sum(coalesce(json_extract(limits, '$.memory_mb'), 0)),
       sum(CAST(round(coalesce(json_extract(limits, '$.cpu'), 0) * 1000) AS INTEGER)),
       sum(coalesce(json_extract(limits, '$.pids'), 0))
FROM sandboxes
WHERE state IN ('creating', 'starting', 'running', 'paused', 'stopping', 'destroying')
GROUP BY node;
