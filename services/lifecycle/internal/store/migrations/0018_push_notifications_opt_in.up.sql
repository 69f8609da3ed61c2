-- Pushes are opt-in per session, as in the original (issue 23 rule 8): a
-- session created from now on without push_notifications is not pushed
-- when it waits for input (the failure push ignores the opt-in).
ALTER TABLE sessions ALTER COLUMN push_notifications SET DEFAULT false;

-- Existing sessions got true from 0009's default, not from anyone's
-- choice, so they are opted out — except those an operator turned on by
-- an edit (the PATCH or update_push_notifications line "[Session] updated
-- …push_notifications…" on the timeline: a true value after such a line is
-- a choice, since the only way back to true after turning it off is
-- another such edit). A creation that asked for true explicitly left no
-- trace and is opted out too: the operator turns it on again.
UPDATE sessions s SET push_notifications = false
WHERE s.push_notifications
  AND NOT EXISTS (
    SELECT 1 FROM session_timeline t
    WHERE t.session_id = s.id
      AND t.kind = 'note'
      AND t.message ~ '^\[Session\] updated ([a-z_]+, )*push_notifications(,| |$)');
