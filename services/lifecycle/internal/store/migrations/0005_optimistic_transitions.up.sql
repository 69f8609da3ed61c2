-- A session's event stream is read from the outbox, which already holds
-- every event a transition sent, so each effect is written once.
DROP TABLE session_events;

-- sessions.version is the token a transition decides under: the write is
-- conditional on it. Armed wake-ups are part of what resume decides from,
-- so changing them must move the token too, whoever changes them.
CREATE FUNCTION wake_triggers_bump_session_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET version = version + 1
    WHERE id IN (SELECT session_id FROM changed);
    RETURN NULL;
END
$$;

CREATE TRIGGER wake_triggers_insert_bumps_version
    AFTER INSERT ON wake_triggers REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION wake_triggers_bump_session_version();
CREATE TRIGGER wake_triggers_update_bumps_version
    AFTER UPDATE ON wake_triggers REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION wake_triggers_bump_session_version();
CREATE TRIGGER wake_triggers_delete_bumps_version
    AFTER DELETE ON wake_triggers REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION wake_triggers_bump_session_version();
