-- 0025: the node whose disk holds a volume's files and a template's
-- layers, so that in a fleet what touches them goes there. '' for what
-- was made before: on one box, that box's.
ALTER TABLE volumes ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN node TEXT NOT NULL DEFAULT '';
