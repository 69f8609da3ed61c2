-- Slack: the triggers that start sessions from Slack messages, the events
-- Slack delivered (the durable acceptance), and which thread belongs to
-- which session. docs/contexts/notification.md NT-9…NT-12 say why here.

-- A trigger: a channel (or "dm", direct messages to the app), who may fire
-- it, an optional prefix or mention rule, and what a started session is
-- made from. The domain validates; the checks keep hand-typed rows sane.
CREATE TABLE slack_triggers (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel          text        NOT NULL CHECK (channel = 'dm' OR channel ~ '^[A-Z0-9]{2,32}$'),
    allowed_user_ids text[]      NOT NULL CHECK (cardinality(allowed_user_ids) > 0),
    prefix           text        NOT NULL DEFAULT '',
    require_mention  boolean     NOT NULL DEFAULT false,
    git_root         text        NOT NULL CHECK (git_root <> ''),
    agent_root       text        NOT NULL DEFAULT '',
    agent_runtime    text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL
);
CREATE INDEX slack_triggers_channel ON slack_triggers (channel, id);

-- Every event_callback the gateway acknowledged, written before the
-- acknowledgement: the primary key is the replay and retry guard (Slack
-- redelivers an event under the same event_id), and the row is the
-- workflow slack/event/<event_id>'s input and progress. Each step's column
-- is set once the step is done, so a retried activity skips what it did.
CREATE TABLE slack_events (
    event_id     text        PRIMARY KEY CHECK (event_id ~ '^[A-Za-z0-9]{1,64}$'),
    -- The envelope as Slack sent it (bytes: it is re-read, never queried).
    payload      bytea       NOT NULL,
    received_at  timestamptz NOT NULL,
    -- The session the event started or followed up (NULL: none yet, or none).
    session_id   bigint,
    -- The steps done: the follow-up delivered or queued, the human message
    -- recorded (or found to belong to nobody), the reply posted.
    followed_up_at timestamptz,
    captured_at  timestamptz,
    replied_at   timestamptz,
    -- When processing ended, and what became of it in words.
    processed_at timestamptz,
    outcome      text        NOT NULL DEFAULT ''
);
CREATE INDEX slack_events_unprocessed ON slack_events (received_at) WHERE processed_at IS NULL;

-- A thread started by a trigger belongs to the session it started: replies
-- in it are that session's follow-ups, and its needs_input and failure
-- pushes are posted into it. One thread, one session; a session has at
-- most one thread.
CREATE TABLE slack_threads (
    channel_id  text        NOT NULL,
    thread_ts   text        NOT NULL,
    session_id  bigint      NOT NULL UNIQUE,
    -- The trigger that started it: who may follow up. Deleting the trigger
    -- leaves the binding (pushes still reach the thread) but no one may
    -- follow up any more.
    trigger_id  bigint      REFERENCES slack_triggers (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (channel_id, thread_ts)
);
