-- 0008: events by time, for the retention trim (TrimEvents), which
-- deletes the oldest in small batches without scanning the table.

CREATE INDEX events_created ON events (created_at);
