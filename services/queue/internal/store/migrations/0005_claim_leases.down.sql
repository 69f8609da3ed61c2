ALTER TABLE session_queues DROP CONSTRAINT session_queues_interrupt_lease_complete,
    DROP COLUMN interrupt_lease_expires_at, DROP COLUMN interrupt_lease_id;
DROP INDEX enqueued_messages_one_claim_per_session;
UPDATE enqueued_messages SET status = 'pending', claimed_at = NULL WHERE status = 'processing';
ALTER TABLE enqueued_messages DROP CONSTRAINT enqueued_messages_leased_iff_processing,
    DROP COLUMN lease_expires_at, DROP COLUMN lease_id;
