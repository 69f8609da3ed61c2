ALTER TABLE outbox_messages ADD CONSTRAINT outbox_messages_event_id_subscriber_key UNIQUE (event_id, subscriber);
