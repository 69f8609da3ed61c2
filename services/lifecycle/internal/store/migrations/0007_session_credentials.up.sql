-- The MCP tool groups a session was created with: they decide the scopes
-- of its credentials (services/lifecycle/rules). Existing sessions get the
-- default.
ALTER TABLE sessions ADD COLUMN mcp_tool_groups text[] NOT NULL DEFAULT '{sessions}';

-- Session credentials: minted per session for its agent. Only the token's
-- SHA-256 is kept. No foreign key to sessions: a hard delete revokes the
-- session's credentials (reason "session #N was deleted") and keeps them,
-- so a later call is told why rather than "unknown".
CREATE TABLE session_credentials (
    id             uuid        PRIMARY KEY,
    session_id     bigint      NOT NULL,
    token_sha256   bytea       NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    scopes         text[]      NOT NULL,
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    revoked_reason text,
    CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
);
-- Archive and delete revoke a session's live credentials.
CREATE INDEX session_credentials_live ON session_credentials (session_id) WHERE revoked_at IS NULL;
