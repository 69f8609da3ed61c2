-- Triggers (issue 13): what each wake-up does when it fires and where it
-- stands. The row is the truth and Temporal the clock: a timer that fires
-- into a trigger no longer armed does nothing. Only armed triggers count
-- as what a session sleeps on (resume's cancel-or-preserve, the conditional
-- re-sleep, the first start's guard, awaiting_scheduled_wake); firing ones
-- are being delivered, fired and cancelled ones are history.
ALTER TABLE wake_triggers
    ADD COLUMN prompt       text        NOT NULL DEFAULT '',
    ADD COLUMN source       text        NOT NULL DEFAULT 'wake_me_up_later'
        CHECK (source IN ('wake_me_up_later', 'pause_until', 'watch')),
    ADD COLUMN states       text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN status       text        NOT NULL DEFAULT 'armed'
        CHECK (status IN ('armed', 'firing', 'fired', 'cancelled')),
    -- The watched session's state a watcher fired on (its default prompt
    -- names it).
    ADD COLUMN fired_state  text,
    ADD COLUMN fired_at     timestamptz,
    ADD COLUMN cancelled_at timestamptz,
    ADD CONSTRAINT wake_triggers_source_kind CHECK ((kind = 'session_state') = (source = 'watch')),
    ADD CONSTRAINT wake_triggers_watch_shape
        CHECK (kind <> 'session_state' OR (watched_session_id IS NOT NULL AND cardinality(states) > 0));

-- What transitions read under a session's lock: its armed wake-ups, and the
-- armed watchers of it.
CREATE INDEX wake_triggers_armed ON wake_triggers (session_id) WHERE status = 'armed';
CREATE INDEX wake_triggers_watching ON wake_triggers (watched_session_id)
    WHERE status = 'armed' AND kind = 'session_state';
