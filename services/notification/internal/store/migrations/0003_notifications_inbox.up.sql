-- The operator's inbox as issue 14 shapes it. 0001's notifications table
-- was never written (nothing consumed the pushes until now), so it is
-- replaced rather than altered.
DROP TABLE notifications;

CREATE TABLE notifications (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type         text        NOT NULL CHECK (type IN ('needs_input', 'failure', 'elicitation', 'agent_message')),
    -- The session it is about; NULL for none (an operator's program may
    -- push about no session).
    session_id   bigint      CHECK (session_id > 0),
    title        text        NOT NULL CHECK (title <> ''),
    body         text        NOT NULL DEFAULT '',
    -- needs_input: the session's needs_input_count of the pause it reports.
    marker       bigint      NOT NULL DEFAULT 0 CHECK (marker >= 0),
    -- Set by producers that may run twice, so a redelivered effect creates
    -- nothing new: "failure/<lifecycle event id>".
    dedup_key    text        UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    read_at      timestamptz,
    dismissed_at timestamptz,
    -- The session moved on (it resumed): the notification is history.
    stale_at     timestamptz,
    -- When the push reached a sink.
    pushed_at    timestamptz,
    CONSTRAINT notifications_needs_input_names_its_pause
        CHECK (type <> 'needs_input' OR (session_id IS NOT NULL AND marker > 0))
);

-- One needs-input notification per pause, however often the debounce that
-- creates it runs (a redelivered effect, a retried activity).
CREATE UNIQUE INDEX notifications_one_per_pause ON notifications (session_id, type, marker) WHERE type = 'needs_input';

-- A session's notifications: the inbox's session filter, staling on resume,
-- dismissing on archive.
CREATE INDEX notifications_session ON notifications (session_id, id);

-- The unread count, and the unread filter.
CREATE INDEX notifications_unread ON notifications (id) WHERE read_at IS NULL AND dismissed_at IS NULL;
