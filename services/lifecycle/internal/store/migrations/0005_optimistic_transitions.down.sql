DROP TRIGGER wake_triggers_delete_bumps_version ON wake_triggers;
DROP TRIGGER wake_triggers_update_bumps_version ON wake_triggers;
DROP TRIGGER wake_triggers_insert_bumps_version ON wake_triggers;
DROP FUNCTION wake_triggers_bump_session_version();

CREATE TABLE session_events (
    id         bigserial   PRIMARY KEY,
    event_id   uuid        NOT NULL UNIQUE,
    session_id bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    alerting   boolean     NOT NULL DEFAULT false,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX session_events_session ON session_events (session_id, id);
