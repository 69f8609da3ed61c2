DROP TABLE session_events;
