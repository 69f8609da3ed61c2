DROP INDEX sessions_heartbeat;
