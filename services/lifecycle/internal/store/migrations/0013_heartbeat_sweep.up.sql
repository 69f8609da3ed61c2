-- The heartbeat sweep reads the needs_input (2) sessions with their
-- heartbeat on, the longest at rest first.
CREATE INDEX sessions_heartbeat ON sessions (updated_at, id) WHERE heartbeat_enabled AND status = 2;
