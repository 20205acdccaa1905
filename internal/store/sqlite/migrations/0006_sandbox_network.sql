-- A sandbox's egress policy (api.NetworkPolicy as JSON).
ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT '{"egress":"public"}';
