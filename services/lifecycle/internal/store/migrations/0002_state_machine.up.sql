ALTER TABLE sessions
    ADD COLUMN markers       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(markers) = 'object'),
    ADD COLUMN elapsed_since timestamptz,
    ADD COLUMN archived_at   timestamptz,
    ADD COLUMN archived_from smallint    CHECK (archived_from BETWEEN 0 AND 4),
    ADD COLUMN trash_after   timestamptz,
    ADD COLUMN version       bigint      NOT NULL DEFAULT 1;

-- The session's timeline: every applied transition, its warnings, and the
-- refusals a caller met.
CREATE TABLE session_timeline (
    id         bigserial   PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind       text        NOT NULL CHECK (kind IN ('transition', 'warning', 'refusal', 'note')),
    message    text        NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX session_timeline_session ON session_timeline (session_id, id);

-- The session's event stream: each applied transition and each side effect
-- it requested, in order, readable before the consuming contexts exist.
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

-- Wake-ups armed for a session. Transitions read them (a recovery resume
-- keeps them; a deferred sleep needs one); the wake-up issue writes them.
CREATE TABLE wake_triggers (
    id                 bigserial   PRIMARY KEY,
    session_id         bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind               text        NOT NULL CHECK (kind IN ('one_time', 'session_state')),
    fire_at            timestamptz,
    watched_session_id bigint,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'one_time') = (fire_at IS NOT NULL))
);
CREATE INDEX wake_triggers_session ON wake_triggers (session_id);
