-- The needs-input push opt-in (the notification service reads it off the
-- session snapshot its effects carry). Existing sessions get the default:
-- pushed.
ALTER TABLE sessions ADD COLUMN push_notifications boolean NOT NULL DEFAULT true;
