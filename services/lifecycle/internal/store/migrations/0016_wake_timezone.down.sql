ALTER TABLE wake_triggers DROP COLUMN timezone;
