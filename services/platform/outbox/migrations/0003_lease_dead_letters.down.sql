CREATE INDEX outbox_messages_aggregate ON outbox_messages (aggregate_key, id);

DROP INDEX outbox_messages_pending;
CREATE INDEX outbox_messages_pending
    ON outbox_messages (subscriber, next_attempt_at, id)
    WHERE delivered_at IS NULL;

ALTER TABLE outbox_messages
    DROP COLUMN permanent_failures,
    DROP COLUMN dead_at;
