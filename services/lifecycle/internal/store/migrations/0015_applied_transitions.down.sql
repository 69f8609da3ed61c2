DROP TABLE applied_transitions;
