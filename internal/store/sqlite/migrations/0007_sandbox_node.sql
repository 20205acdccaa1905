-- The control plane (node) that owns a sandbox: the one that recovers,
-- reaps and sweeps it. Rows from before this migration belong to whichever
-- node starts on this database first ('' is claimed by any node).
ALTER TABLE sandboxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
