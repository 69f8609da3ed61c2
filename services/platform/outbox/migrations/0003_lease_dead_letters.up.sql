-- Dead letters: a message no retry can deliver (the consumer refused it, or
-- it kept failing permanently) is parked with its last_error and never
-- claimed again. permanent_failures counts the failures that decide it;
-- transient ones (a consumer down, a timeout) never do.
ALTER TABLE outbox_messages
    ADD COLUMN dead_at            timestamptz,
    ADD COLUMN permanent_failures integer NOT NULL DEFAULT 0;

-- A relay claims by this index; parked and delivered rows leave it.
DROP INDEX outbox_messages_pending;
CREATE INDEX outbox_messages_pending
    ON outbox_messages (subscriber, next_attempt_at, id)
    WHERE delivered_at IS NULL AND dead_at IS NULL;

-- The session stream has its own table; nothing reads the outbox by
-- aggregate any more, and the index cost a B-tree insert per message.
DROP INDEX outbox_messages_aggregate;
