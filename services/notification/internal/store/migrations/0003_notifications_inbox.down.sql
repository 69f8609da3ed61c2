DROP TABLE notifications;

CREATE TABLE notifications (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint      NOT NULL,
    kind            text        NOT NULL CHECK (kind IN ('needs_input', 'failed', 'push')),
    title           text        NOT NULL CHECK (title <> ''),
    body            text        NOT NULL DEFAULT '',
    idempotency_key text        UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    read_at         timestamptz,
    dismissed_at    timestamptz,
    stale_at        timestamptz
);

CREATE INDEX notifications_open ON notifications (created_at DESC, id DESC) WHERE dismissed_at IS NULL;

CREATE INDEX notifications_session ON notifications (session_id, id);
