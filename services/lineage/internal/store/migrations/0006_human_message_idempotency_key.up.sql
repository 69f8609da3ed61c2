-- A boundary names each utterance it records (Slack: slack/<event id>; the
-- console: its form's key), so that a retry — the boundary crashed after
-- lineage recorded the message and before it noted that done — finds the
-- first record instead of writing a second. The unique constraint is the
-- guard, for concurrent retries too; NULL (no key) repeats freely, as
-- before. Adding a column updates no row, so the immutability triggers
-- have nothing to refuse.
ALTER TABLE human_messages ADD COLUMN idempotency_key text
    CONSTRAINT human_messages_idempotency_key UNIQUE
    CHECK (idempotency_key <> '');
