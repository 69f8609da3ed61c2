-- A client's idempotency key, so a retried create never queues twice: unique
-- per session, and a retry gets the first message back.
ALTER TABLE enqueued_messages
    ADD COLUMN idempotency_key text CHECK (idempotency_key <> ''),
    -- The same limits the domain checks (lifecycle's prompt and goal limits),
    -- so nothing written around it can store what no request may send.
    ADD CONSTRAINT enqueued_messages_content_length CHECK (char_length(content) <= 500000),
    ADD CONSTRAINT enqueued_messages_goal_length CHECK (char_length(goal) <= 50000),
    ADD CONSTRAINT enqueued_messages_acting_session_positive CHECK (acting_session_id > 0);

CREATE UNIQUE INDEX enqueued_messages_idempotency_key
    ON enqueued_messages (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- One row per session that has ever had a queue: the row every write to that
-- session's queue locks (enqueue, edit, reorder, delete and seal FOR NO KEY
-- UPDATE or FOR UPDATE; a claim FOR KEY SHARE, so claims do not wait on each
-- other but a seal waits for every claim in flight), and the seal of the
-- archive protocol (see package store).
CREATE TABLE session_queues (
    session_id bigint      PRIMARY KEY,
    -- Set while an archive of the session is being decided or has committed:
    -- the queue accepts nothing new and delivers nothing.
    sealed_at  timestamptz,
    -- Who sealed it, so an archive attempt that gives up unseals only its
    -- own seal, never a later one's.
    sealed_by  text,
    CONSTRAINT session_queues_sealed_by_iff_sealed
        CHECK ((sealed_at IS NULL) = (sealed_by IS NULL)),
    CONSTRAINT session_queues_sealed_by_not_empty CHECK (sealed_by <> '')
);
