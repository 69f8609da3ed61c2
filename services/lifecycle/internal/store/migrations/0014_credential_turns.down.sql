DROP INDEX IF EXISTS session_credentials_live_turns;
ALTER TABLE session_credentials
    DROP COLUMN IF EXISTS turn_id,
    DROP COLUMN IF EXISTS turn_incarnation,
    DROP COLUMN IF EXISTS turn_node,
    DROP COLUMN IF EXISTS expires_at;
