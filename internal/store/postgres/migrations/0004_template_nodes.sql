-- 0004: templates across a fleet's nodes (store.Template.Blobs, .Nodes).
--   templates.blobs: the image's layers as its source stored them
--     ({digest, diff_id, size}), bottom first, which the node that made
--     the template keeps; '[]' for a template made from a snapshot or
--     before this migration.
--   template_nodes: the nodes whose layer stores hold a template's
--     layers; gone with the template.
ALTER TABLE templates ADD COLUMN blobs jsonb NOT NULL DEFAULT '[]';

CREATE TABLE template_nodes (
    template_id text COLLATE "C" NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    node        text COLLATE "C" NOT NULL,
    PRIMARY KEY (template_id, node)
);
