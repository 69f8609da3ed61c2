-- The GitHub pull requests a session's agent opened (LC-33) and what their
-- watchers know between two readings (LC-34). A session's rows go with it.
CREATE TABLE pull_requests (
    session_id      bigint      NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    owner           text        NOT NULL,
    repo            text        NOT NULL,
    number          integer     NOT NULL CHECK (number > 0),
    state           text        NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'merged', 'closed')),
    -- The merge notice was queued: never again.
    merged_notified boolean     NOT NULL DEFAULT false,
    -- The last reading showed a conflict whose notice was queued; conflicts
    -- counts the conflicts noticed (each notice's key).
    in_conflict     boolean     NOT NULL DEFAULT false,
    conflicts       integer     NOT NULL DEFAULT 0,
    -- The highest review comment id, and the failed check runs, passed on.
    comments_seen   bigint      NOT NULL DEFAULT 0,
    checks_seen     bigint[]    NOT NULL DEFAULT '{}',
    recorded_at     timestamptz NOT NULL,
    read_at         timestamptz,
    PRIMARY KEY (session_id, owner, repo, number)
);
-- A webhook delivery names a repository and a number, not a session;
-- GitHub's names are case-insensitive.
CREATE INDEX pull_requests_by_pull_request ON pull_requests (lower(owner), lower(repo), number);

-- Webhook deliveries taken (X-GitHub-Delivery), so a redelivery or a
-- replay is acted on once; pruned by lifecycle-github-deliveries-retention.
CREATE TABLE github_deliveries (
    delivery_id text        PRIMARY KEY,
    event       text        NOT NULL,
    received_at timestamptz NOT NULL
);
CREATE INDEX github_deliveries_received_at ON github_deliveries (received_at);
