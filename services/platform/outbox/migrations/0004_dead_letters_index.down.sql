DROP INDEX outbox_messages_dead;
