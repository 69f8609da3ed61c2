ALTER TABLE slack_events DROP COLUMN follow_up_answer;
