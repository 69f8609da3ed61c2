-- Free-form notes on a session (the agent's <session-notes>), edited through
-- PATCH /sessions/{id} and MCP action_session update_notes. The length limit
-- (50,000 characters) is the domain's, like goal's.
ALTER TABLE sessions ADD COLUMN notes text NOT NULL DEFAULT '';
