-- Delivery (issue 12). A sent message records the turn it became
-- (delivered_job_id, the session's running_job_id for that turn) and, when
-- the runner's turn-end drain handed it over, the turn it followed
-- (handed_over_from): a drain retried after its answer was lost gets the same
-- message back instead of claiming the next one.
ALTER TABLE enqueued_messages
    ADD COLUMN delivered_job_id text CHECK (delivered_job_id <> ''),
    ADD COLUMN handed_over_from text CHECK (handed_over_from <> '');

CREATE UNIQUE INDEX enqueued_messages_handed_over_from
    ON enqueued_messages (session_id, handed_over_from)
    WHERE handed_over_from IS NOT NULL;

-- When the session was last unarchived: an archive's retirement that arrives
-- after the unarchive undoing it (effects may be delivered out of order)
-- retires nothing.
ALTER TABLE session_queues ADD COLUMN reopened_at timestamptz;

-- The stale-seal sweep reads the sealed queues every minute.
CREATE INDEX session_queues_sealed_at ON session_queues (sealed_at) WHERE sealed_at IS NOT NULL;
