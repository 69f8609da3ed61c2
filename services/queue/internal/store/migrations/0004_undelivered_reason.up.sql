-- Why a message ended undelivered (issue 20): its session was archived, its
-- session was deleted (the drain found it gone), or it could never be a turn
-- (blank content, queued before blank text was refused). Undelivered always
-- says why; the rows retired before this column were all retired by archives.
ALTER TABLE enqueued_messages ADD COLUMN undelivered_reason text CHECK (undelivered_reason <> '');

UPDATE enqueued_messages SET undelivered_reason = 'the session was archived while the message was queued'
    WHERE status = 'undelivered';

ALTER TABLE enqueued_messages ADD CONSTRAINT enqueued_messages_undelivered_reason_iff_undelivered
    CHECK ((status = 'undelivered') = (undelivered_reason IS NOT NULL));
