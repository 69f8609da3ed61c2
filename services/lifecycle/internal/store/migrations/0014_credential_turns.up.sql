-- A session credential may carry an expiry (past it, it opens nothing) and
-- name the agent turn it was minted for: the turn's end revokes it, and so
-- does the next start of its node's runner (a new incarnation), whatever
-- became of the revocation the turn's own end tried.
ALTER TABLE session_credentials
    ADD COLUMN expires_at       timestamptz,
    ADD COLUMN turn_node        text,
    ADD COLUMN turn_incarnation text,
    ADD COLUMN turn_id          text,
    ADD CHECK ((turn_node IS NULL) = (turn_id IS NULL) AND (turn_node IS NULL) = (turn_incarnation IS NULL));
-- The node sweep finds a node's live turn credentials.
CREATE INDEX session_credentials_live_turns ON session_credentials (turn_node) WHERE revoked_at IS NULL AND turn_node IS NOT NULL;

-- The runner's turn credentials minted before this named no turn, so no
-- sweep finds them: each live one gets the expiry a turn's credential gets
-- now (a turn runs at most 7 days), counted from here, so one whose
-- revocation was lost still closes.
UPDATE session_credentials c SET expires_at = now() + interval '7 days'
WHERE c.revoked_at IS NULL AND c.expires_at IS NULL AND EXISTS (
    SELECT 1 FROM session_timeline t
    WHERE t.session_id = c.session_id
      AND t.message = '[Credentials] session credential ' || c.id::text || ' minted (scopes: ' || array_to_string(c.scopes, ', ') || ') (by the runner)');
