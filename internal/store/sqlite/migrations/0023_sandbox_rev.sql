-- Every write to a sandbox's record gives it the next revision, so the
-- policies read what changed since their last tick instead of every
-- record each tick (store.Store.SandboxesSince). Records written before
-- this migration keep revision 0 until their next write.
ALTER TABLE sandboxes ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sandboxes_rev ON sandboxes (rev);
