-- A paused sandbox holds no CPU (store.ShareOf): take the CPU limits of
-- the paused sandboxes out of the counters migration 0020 made, so they
-- stay the sum of the records' shares.
UPDATE tenant_usage SET cpu_milli = cpu_milli - coalesce((
    SELECT sum(CAST(round(coalesce(json_extract(limits, '$.cpu'), 0) * 1000) AS INTEGER))
    FROM sandboxes WHERE sandboxes.tenant_id = tenant_usage.tenant_id AND state = 'paused'), 0);

UPDATE node_usage SET cpu_milli = cpu_milli - coalesce((
    SELECT sum(CAST(round(coalesce(json_extract(limits, '$.cpu'), 0) * 1000) AS INTEGER))
    FROM sandboxes WHERE sandboxes.node = node_usage.node AND state = 'paused'), 0);
