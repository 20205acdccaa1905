-- 0014: a template made from a snapshot of a sandbox of the host template
-- is the host template with the snapshot's files as a layer over it: base
-- says so ('host'); '' for an image's template. Its layers then name the
-- snapshot's layer as "snapshot:<id>".

ALTER TABLE templates ADD COLUMN base TEXT NOT NULL DEFAULT '';
