DROP TABLE inbox_events;
