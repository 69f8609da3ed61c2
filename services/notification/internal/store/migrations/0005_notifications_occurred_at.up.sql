-- When what a notification reports happened (the failure, the agent's
-- message): a resume stales its session's notifications about what happened
-- before it (issue 23 rule 9), and a failure's notification may be created
-- well after the failure when its effect was delivered late. Rows from
-- before this column were created as their event was delivered, which is
-- the best record of it there is.
ALTER TABLE notifications ADD COLUMN occurred_at timestamptz;
UPDATE notifications SET occurred_at = created_at;
ALTER TABLE notifications ALTER COLUMN occurred_at SET DEFAULT now(), ALTER COLUMN occurred_at SET NOT NULL;
