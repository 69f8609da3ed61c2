CREATE TABLE sessions (
    id                bigserial   PRIMARY KEY,
    slug              text        UNIQUE
                                  CHECK (slug ~ '^[a-z0-9][a-z0-9-]*$' AND slug !~ '^[0-9]+$'),
    -- Load-bearing integers: running 0, waiting 1, needs_input 2, archived 3, failed 4.
    status            smallint    NOT NULL DEFAULT 1 CHECK (status BETWEEN 0 AND 4),
    title             text        NOT NULL DEFAULT '',
    prompt            text        NOT NULL,
    goal              text        NOT NULL DEFAULT '',
    agent_root        text        NOT NULL DEFAULT '',
    agent_runtime     text        NOT NULL DEFAULT '',
    git_root          text        NOT NULL DEFAULT '',
    branch            text        NOT NULL DEFAULT '',
    subdirectory      text        NOT NULL DEFAULT '',
    -- The spawn edge. SET NULL: a session whose parent was deleted is still a
    -- meaningful row, one with no recorded parent.
    parent_session_id bigint      REFERENCES sessions (id) ON DELETE SET NULL,
    genesis           text        NOT NULL,
    scheduling_class  text        NOT NULL CHECK (scheduling_class IN ('priority', 'spot')),
    precedence        integer     NOT NULL DEFAULT 0,
    custom_metadata   jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_metadata) = 'object'),
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);

CREATE INDEX sessions_status_id ON sessions (status, id DESC);
CREATE INDEX sessions_parent_session_id ON sessions (parent_session_id);
