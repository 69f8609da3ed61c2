-- Claims under a lease (issue 22): no transaction is held across
-- lifecycle's DeliverTurn any more. A deliverer commits its claim (status
-- processing, with a lease), calls lifecycle with nothing open, then settles
-- the claim (sent, undelivered, or back to pending) only while the lease is
-- still its own. A holder that dies leaves its claim to expire: the next
-- deliverer of the session puts the message back in line and goes on.
--
-- A processing message is a commit now, not a transaction in flight; none
-- can exist before this migration, but any left by a crash mid-claim are
-- pending again.
UPDATE enqueued_messages SET status = 'pending', claimed_at = NULL WHERE status = 'processing';

ALTER TABLE enqueued_messages
    -- The claim's holder (a token drawn per claim) and when its lease ends.
    ADD COLUMN lease_id         uuid,
    ADD COLUMN lease_expires_at timestamptz,
    ADD CONSTRAINT enqueued_messages_leased_iff_processing
        CHECK ((status = 'processing') = (lease_id IS NOT NULL)
           AND (status = 'processing') = (lease_expires_at IS NOT NULL));

-- One session's deliveries follow each other, as its turns do: at most one
-- message of a session is claimed at a time.
CREATE UNIQUE INDEX enqueued_messages_one_claim_per_session
    ON enqueued_messages (session_id)
    WHERE status = 'processing';

-- The session's interrupt lease: interrupts and turn-end hand-overs of one
-- session are served one at a time (they read, halt-check, deliver and
-- reorder as one step), without a connection pinned for the duration.
ALTER TABLE session_queues
    ADD COLUMN interrupt_lease_id         uuid,
    ADD COLUMN interrupt_lease_expires_at timestamptz,
    ADD CONSTRAINT session_queues_interrupt_lease_complete
        CHECK ((interrupt_lease_id IS NULL) = (interrupt_lease_expires_at IS NULL));
