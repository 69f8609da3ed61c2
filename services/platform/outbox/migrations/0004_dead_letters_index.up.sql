-- The metrics' dead-letter count (ObserveBacklog) reads parked rows on
-- every scrape; they are few, so a partial index keeps that read small
-- however many delivered rows the retention still holds.
CREATE INDEX outbox_messages_dead ON outbox_messages (subscriber) WHERE dead_at IS NOT NULL;
