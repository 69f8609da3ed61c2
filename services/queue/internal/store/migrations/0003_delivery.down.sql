DROP INDEX session_queues_sealed_at;
ALTER TABLE session_queues DROP COLUMN reopened_at;
DROP INDEX enqueued_messages_handed_over_from;
ALTER TABLE enqueued_messages DROP COLUMN handed_over_from, DROP COLUMN delivered_job_id;
