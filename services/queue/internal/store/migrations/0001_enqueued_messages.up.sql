-- Messages queued for a session, delivered one at a time in position order
-- once the session can take them (see ARCHITECTURE.md, queue).
--
-- status moves pending -> processing (claimed with FOR UPDATE SKIP LOCKED by
-- one deliverer) -> sent. A failed delivery rolls back to pending. A message
-- still pending or processing when its session is archived is retired to
-- undelivered: the row is kept, since its content is what the sender was
-- promised delivery of, and the archive line names it.
CREATE TABLE enqueued_messages (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id        bigint      NOT NULL,
    -- Order within the session's queue (1 first); meaningful among live
    -- (pending, processing) messages only.
    position          integer     NOT NULL CHECK (position >= 1),
    status            text        NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'processing', 'sent', 'undelivered')),
    -- Who wrote it: "caller" for anything queued on someone's behalf,
    -- "automated_<notice>" (automated_pr_merged, automated_merge_conflict, ...)
    -- for notices Zimmer addresses to a session itself. Settable by no request.
    origin            text        NOT NULL
                      CHECK (origin = 'caller' OR origin ~ '^automated_[a-z]+(_[a-z]+)*$'),
    -- The session that enqueued it, when one did (acting_session_id).
    acting_session_id bigint,
    content           text        NOT NULL CHECK (content <> ''),
    -- Replaces the session's goal when the message is delivered, if set.
    goal              text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    claimed_at        timestamptz,
    sent_at           timestamptz,
    undelivered_at    timestamptz,
    CONSTRAINT enqueued_messages_claimed_when_processing
        CHECK (status <> 'processing' OR claimed_at IS NOT NULL),
    CONSTRAINT enqueued_messages_sent_at_iff_sent
        CHECK ((status = 'sent') = (sent_at IS NOT NULL)),
    CONSTRAINT enqueued_messages_undelivered_at_iff_undelivered
        CHECK ((status = 'undelivered') = (undelivered_at IS NOT NULL)),
    -- Two live messages of one session never share a position. Deferrable,
    -- so it is checked at the end of each statement rather than row by row
    -- (one UPDATE can shift or swap positions), and a reorder spread over
    -- several statements can defer it to commit with
    -- SET CONSTRAINTS enqueued_messages_live_position DEFERRED.
    CONSTRAINT enqueued_messages_live_position
        EXCLUDE USING btree (session_id WITH =, position WITH =)
        WHERE (status IN ('pending', 'processing'))
        DEFERRABLE INITIALLY IMMEDIATE
);

-- The claim: the first pending message of a session.
CREATE INDEX enqueued_messages_pending
    ON enqueued_messages (session_id, position)
    WHERE status = 'pending';

-- A session's history (list, the archive line, undelivered listings).
CREATE INDEX enqueued_messages_session ON enqueued_messages (session_id, id);
