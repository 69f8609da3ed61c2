ALTER TABLE enqueued_messages DROP COLUMN undelivered_reason;
