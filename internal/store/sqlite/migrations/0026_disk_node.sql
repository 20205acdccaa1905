-- 0026: the node whose disk holds a volume's files, so that in a fleet what touches them goes there. '' for what
-- was made before: on one box, that box's.
ALTER TABLE volumes ADD COLUMN node TEXT NOT NULL DEFAULT '';
