DROP TABLE cost_entries;
