ALTER TABLE human_messages DROP COLUMN idempotency_key;
