-- 0017: pause and idle. paused_at is when a paused sandbox was paused
-- (NULL unless paused); idle_timeout_s its own idle window (0: the
-- server's); keepalive_until keeps it from idle actions until then.

ALTER TABLE sandboxes ADD COLUMN paused_at TEXT;
ALTER TABLE sandboxes ADD COLUMN idle_timeout_s INTEGER NOT NULL DEFAULT 0 CHECK (idle_timeout_s >= 0);
ALTER TABLE sandboxes ADD COLUMN keepalive_until TEXT;
