-- Whether a sandbox's commands run as root inside it (still unprivileged
-- on the host).
ALTER TABLE sandboxes ADD COLUMN root INTEGER NOT NULL DEFAULT 0;
