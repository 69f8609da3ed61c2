-- The stale-session sweep reads the oldest untouched sessions that are
-- neither running (0) nor archived (3); this keeps that read off the
-- archived bulk of the table.
CREATE INDEX sessions_untouched ON sessions (updated_at, id) WHERE status NOT IN (0, 3);
