-- The expired-elicitation sweep reads the sessions blocked on an
-- elicitation (the marker is present only while set), oldest first.
CREATE INDEX sessions_blocked_on_elicitation ON sessions (updated_at, id) WHERE markers ? 'blocked_on_elicitation';
