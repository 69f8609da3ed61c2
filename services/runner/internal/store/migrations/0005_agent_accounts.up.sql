-- The runtimes' login pools (docs/contexts/runner.md RN-30): what every
-- runner node must agree on about each account, never its secrets (those
-- stay in RUNNER_ACCOUNTS_FILE on the nodes).
--
--   agent_accounts   an account that hit a quota or authentication wall:
--                    it rests until rests_until; wall_reason is what the CLI
--                    said. An account with no row has never hit one.
--   account_turns    which account each turn ran under (the turn record),
--                    and when it started: the pool's usage, least used first
--                    and against the quota targets.
--   account_parks    the sessions parked on an account (paused_by
--                    auth_outage): the account's refill resumes them.
CREATE TABLE agent_accounts (
    runtime     text        NOT NULL,
    name        text        NOT NULL,
    rests_until timestamptz NOT NULL,
    wall_reason text        NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (runtime, name)
);

CREATE TABLE account_turns (
    turn_id    text        PRIMARY KEY,
    session_id bigint      NOT NULL,
    runtime    text        NOT NULL,
    account    text        NOT NULL,
    started_at timestamptz NOT NULL
);
CREATE INDEX account_turns_usage ON account_turns (runtime, account, started_at DESC);

CREATE TABLE account_parks (
    session_id bigint      PRIMARY KEY,
    runtime    text        NOT NULL,
    account    text        NOT NULL,
    reason     text        NOT NULL,
    until      timestamptz NOT NULL,
    parked_at  timestamptz NOT NULL
);
CREATE INDEX account_parks_by_account ON account_parks (runtime, account);
