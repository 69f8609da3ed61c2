-- One row per (event, subscriber): each consuming context has its own
-- delivery state, so a slow or broken consumer never holds up the others and
-- no cursor can skip a row whose transaction committed late.
CREATE TABLE outbox_messages (
    id              bigserial   PRIMARY KEY,
    event_id        uuid        NOT NULL,
    subscriber      text        NOT NULL,
    topic           text        NOT NULL,
    aggregate_key   text        NOT NULL,
    payload         bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    delivered_at    timestamptz,
    UNIQUE (event_id, subscriber)
);

CREATE INDEX outbox_messages_pending
    ON outbox_messages (subscriber, next_attempt_at, id)
    WHERE delivered_at IS NULL;

CREATE INDEX outbox_messages_aggregate ON outbox_messages (aggregate_key, id);
