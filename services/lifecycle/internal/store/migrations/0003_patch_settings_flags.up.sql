ALTER TABLE sessions
    ADD COLUMN heartbeat_enabled          boolean NOT NULL DEFAULT false,
    ADD COLUMN heartbeat_interval_seconds integer NOT NULL DEFAULT 60
        CHECK (heartbeat_interval_seconds BETWEEN 30 AND 86400);

-- Experimental settings, one row per setting; a missing row means the
-- setting's default.
CREATE TABLE app_settings (
    key        text        PRIMARY KEY,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- What each session ran with: the first start or resume fixes the
-- start-of-life value, every later one moves the end-of-life value, so a
-- setting toggled between turns shows as a disagreement instead of landing
-- silently in one cohort.
CREATE TABLE session_experimental_flags (
    session_id  bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    setting     text        NOT NULL,
    start_value jsonb       NOT NULL,
    end_value   jsonb       NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz NOT NULL,
    PRIMARY KEY (session_id, setting)
);
