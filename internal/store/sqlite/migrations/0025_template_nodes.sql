-- 0025: templates across a fleet's nodes (store.Template.Blobs, .Nodes).
--   templates.blobs: a JSON array of the image's layers as its source
--     stored them ({digest, diff_id, size}), bottom first, which the node
--     that made the template keeps; '[]' for a template made from a
--     snapshot or before this migration.
--   template_nodes: the nodes whose layer stores hold a template's
--     layers; gone with the template.
ALTER TABLE templates ADD COLUMN blobs TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(blobs));

CREATE TABLE template_nodes (
    template_id TEXT NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    node        TEXT NOT NULL,
    PRIMARY KEY (template_id, node)
) STRICT;
