-- The operator's notifications about sessions: the debounced needs-input
-- push, the failure push, and pushes agents send (send_push_notification).
CREATE TABLE notifications (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint      NOT NULL,
    kind            text        NOT NULL CHECK (kind IN ('needs_input', 'failed', 'push')),
    title           text        NOT NULL CHECK (title <> ''),
    body            text        NOT NULL DEFAULT '',
    -- Set by producers that may run twice (activities, redelivered events)
    -- so a retry creates nothing new, e.g.
    -- "needs_input/<session_id>/<needs_input_count>".
    idempotency_key text        UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    read_at         timestamptz,
    dismissed_at    timestamptz,
    -- The session moved on: the notification no longer describes it.
    stale_at        timestamptz
);

-- The operator's list: what is not dismissed, newest first.
CREATE INDEX notifications_open ON notifications (created_at DESC, id DESC) WHERE dismissed_at IS NULL;

-- Dismissing or staling a session's notifications on its transitions.
CREATE INDEX notifications_session ON notifications (session_id, id);

-- btree_gist (a trusted extension shipped with Postgres) lets the exclusion
-- constraint below compare text keys with =.
CREATE EXTENSION IF NOT EXISTS btree_gist;

-- Operational alerts: one row per page. A repeat of a dedup_key (e.g. the
-- failing callback's name, or "undelivered/<session_id>") inside the window
-- of its open alert does not page again: it is counted on that row
-- (occurrences, last_seen_at). The database refuses a second alert for a key
-- whose window is still open, so concurrent raisers cannot both page: the
-- store inserts with ON CONFLICT ON CONSTRAINT alerts_one_open_per_key
-- DO NOTHING and counts the repeat when nothing was inserted.
CREATE TABLE alerts (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dedup_key     text        NOT NULL CHECK (dedup_key <> ''),
    summary       text        NOT NULL CHECK (summary <> ''),
    details       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
    occurrences   integer     NOT NULL DEFAULT 1 CHECK (occurrences >= 1),
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    -- End of the dedup window, fixed when the alert opens.
    dedup_until   timestamptz NOT NULL,
    CONSTRAINT alerts_seen_in_order CHECK (last_seen_at >= first_seen_at),
    CONSTRAINT alerts_window_after_open CHECK (dedup_until > first_seen_at),
    CONSTRAINT alerts_one_open_per_key
        EXCLUDE USING gist (dedup_key WITH =, tstzrange(first_seen_at, dedup_until) WITH &&)
);
