ALTER TABLE sessions DROP COLUMN push_notifications;
