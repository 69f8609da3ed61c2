DROP TABLE outbox_messages;
