ALTER TABLE notifications DROP COLUMN occurred_at;
