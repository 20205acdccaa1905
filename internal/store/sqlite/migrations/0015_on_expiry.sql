-- 0015: what a sandbox's expiry does: '' or 'destroy' destroys it, 'stop'
-- stops it (its files kept, its clock held).

ALTER TABLE sandboxes ADD COLUMN on_expiry TEXT NOT NULL DEFAULT '';
