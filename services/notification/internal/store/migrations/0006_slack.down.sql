DROP TABLE slack_threads;
DROP TABLE slack_events;
DROP TABLE slack_triggers;
