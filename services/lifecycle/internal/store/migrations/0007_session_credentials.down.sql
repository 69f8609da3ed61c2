DROP TABLE session_credentials;
ALTER TABLE sessions DROP COLUMN mcp_tool_groups;
