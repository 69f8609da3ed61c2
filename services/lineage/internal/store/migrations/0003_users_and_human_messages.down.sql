DROP TABLE human_messages;
DROP FUNCTION human_messages_immutable();
DROP TABLE user_slack_ids;
DROP TABLE users;
