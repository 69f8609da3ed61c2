DROP TABLE session_experimental_flags;
DROP TABLE app_settings;
ALTER TABLE sessions DROP COLUMN heartbeat_enabled, DROP COLUMN heartbeat_interval_seconds;
