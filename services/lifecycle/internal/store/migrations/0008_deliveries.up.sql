-- Every delivery lifecycle applied (DeliverTurn), by the id its caller gave
-- it ("queue/message/<id>"): a retried delivery with a seen id answers the
-- first one (its job) and changes nothing, so a prompt never runs twice
-- even when the queue's own commit failed after lifecycle's. Written in the
-- transaction that makes the turn; pruned after a week by the retention
-- schedule lifecycle-deliveries-retention. No foreign key: a hard delete
-- of the session leaves the record to the pruning.
CREATE TABLE deliveries (
    delivery_id text        PRIMARY KEY,
    session_id  bigint      NOT NULL,
    job_id      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_created_at ON deliveries (created_at);
