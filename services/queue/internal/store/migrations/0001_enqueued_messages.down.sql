DROP TABLE enqueued_messages;
