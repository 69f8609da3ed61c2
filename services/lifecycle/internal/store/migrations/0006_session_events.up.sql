-- A session's event stream gets its own table again, written in the same
-- batch as the transition that produced it, so the outbox holds only what
-- is in flight and can be pruned once delivered. Each entry keeps the id of
-- the announced event that carries it: an effect's own event, or, for the
-- transition and the effects lifecycle carries out itself, the transition's
-- SessionUpdated.
--
-- Transitions now decide under the session's row lock (SELECT … FOR
-- UPDATE), not against sessions.version; the wake_triggers triggers that
-- move version stay, so version still counts every change to what a
-- transition decides from.
CREATE TABLE session_events (
    id         bigserial   PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    event_id   uuid        NOT NULL,
    name       text        NOT NULL,
    alerting   boolean     NOT NULL DEFAULT false,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX session_events_session ON session_events (session_id, id);
