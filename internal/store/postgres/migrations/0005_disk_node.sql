-- 0005: the node whose disk holds a volume's files, so that in a fleet what touches them goes there. '' for what
-- was made before (a box moved here: its first node's).
ALTER TABLE volumes ADD COLUMN node text COLLATE "C" NOT NULL DEFAULT '';
