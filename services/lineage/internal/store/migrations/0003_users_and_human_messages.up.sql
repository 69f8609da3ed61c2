-- The users roster: who counts as a human. Hand-seeded, not authentication;
-- edited only from the operator's supervisor surface (HTTP Basic), never by
-- an agent, because it is the authority the human-message record rests on.
CREATE TABLE users (
    key          text        PRIMARY KEY CHECK (key ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    display_name text        NOT NULL CHECK (display_name <> ''),
    -- A linkage, not a capture path: nothing attributes a message by email.
    email        text,
    -- Free-form context for agents (who this person is, whose word is
    -- final); travels with the messages into prompts and MCP.
    notes        text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- One row per Slack user ID. The primary key is the invariant: one Slack ID
-- never belongs to two humans, so an author never depends on row order.
-- Keys are immutable (renaming would orphan messages), hence no ON UPDATE.
CREATE TABLE user_slack_ids (
    slack_user_id text PRIMARY KEY CHECK (slack_user_id ~ '^[A-Z0-9]{2,32}$'),
    user_key      text NOT NULL REFERENCES users (key) ON DELETE CASCADE
);
CREATE INDEX user_slack_ids_user ON user_slack_ids (user_key);

-- The spec's two rows. Email and Slack IDs are deployment configuration
-- (this repository is public): a deployment fills them in at
-- /supervisor/users. Until then no Slack message is attributed to anybody.
INSERT INTO users (key, display_name) VALUES
    ('tadasant', 'Tadas'),
    ('juliehazz', 'Julie');

-- Human messages: words Zimmer knows a named human authored, captured at an
-- authenticated input boundary. Immutable evidence:
--   * author is the user key stored verbatim, not a foreign key, so a roster
--     edit can never rewrite who said something;
--   * authored_in_session_id has no foreign key either: lineage does not own
--     sessions, and a session's hard delete leaves the record in place as
--     evidence naming the session id (nothing cascades, nothing is nulled);
--   * the triggers below refuse UPDATE, DELETE and TRUNCATE outright, so not
--     even a bug or a hand-typed query in the service's own role can edit
--     the record afterwards. Only DROP (a down migration) removes it.
CREATE TABLE human_messages (
    id                     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    author                 text        NOT NULL CHECK (author <> ''),
    provenance             text        NOT NULL CHECK (provenance IN (
        'web_ui.new_session', 'web_ui.quick_prompt', 'web_ui.chat_bubble', 'web_ui.follow_up',
        'web_ui.enqueued_message', 'slack.channel_message', 'slack.dm')),
    authored_in_session_id bigint      NOT NULL CHECK (authored_in_session_id > 0),
    content                text        NOT NULL CHECK (content <> ''),
    slack_permalink        text,
    occurred_at            timestamptz NOT NULL,
    recorded_at            timestamptz NOT NULL DEFAULT now()
);

-- Gathering a hierarchy's messages: session_id = ANY($1), newest first.
CREATE INDEX human_messages_session ON human_messages (authored_in_session_id, occurred_at DESC, id DESC);

CREATE FUNCTION human_messages_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'human_messages are immutable evidence: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'a human message can be recorded, never edited or deleted';
END;
$$;

CREATE TRIGGER human_messages_no_update_or_delete
    BEFORE UPDATE OR DELETE ON human_messages
    FOR EACH ROW EXECUTE FUNCTION human_messages_immutable();

CREATE TRIGGER human_messages_no_truncate
    BEFORE TRUNCATE ON human_messages
    FOR EACH STATEMENT EXECUTE FUNCTION human_messages_immutable();
