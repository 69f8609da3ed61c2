-- Every transition lifecycle applied under its caller's idempotency key
-- (TransitionSession's idempotency_key; the runner names each transition
-- one step of one workflow run): a retry with a seen key is answered as
-- already applied and changes nothing, so a retried activity whose first
-- attempt committed needs no read-back to tell. Written in the transaction
-- that makes the transition, as deliveries' records are; pruned with them
-- by the retention schedule lifecycle-deliveries-retention. No foreign key:
-- a hard delete of the session leaves the record to the pruning.
CREATE TABLE applied_transitions (
    idempotency_key text        PRIMARY KEY,
    session_id      bigint      NOT NULL,
    event           text        NOT NULL,
    from_status     smallint    NOT NULL, -- the session's status code, as sessions.status
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX applied_transitions_created_at ON applied_transitions (created_at);
