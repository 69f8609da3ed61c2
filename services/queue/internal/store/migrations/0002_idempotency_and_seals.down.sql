DROP TABLE session_queues;
DROP INDEX enqueued_messages_idempotency_key;
ALTER TABLE enqueued_messages
    DROP CONSTRAINT enqueued_messages_acting_session_positive,
    DROP CONSTRAINT enqueued_messages_goal_length,
    DROP CONSTRAINT enqueued_messages_content_length,
    DROP COLUMN idempotency_key;
