-- Event ids are fresh UUIDs minted by the producer, one per event, so the
-- uniqueness index never refused anything; it cost a random-position B-tree
-- insert on every row, the most expensive part of recording an event.
-- Consumers deduplicate by event id in their inbox.
ALTER TABLE outbox_messages DROP CONSTRAINT outbox_messages_event_id_subscriber_key;
