-- When each page and push workflow was started (or found started: its
-- workflow id, alert/<id> or push/<id>, is the idempotency key). A page or
-- push still unstarted a minute after its row committed lost its start (it
-- failed, or the process died between the commit and the start), and the
-- schedule notification-redrive starts it.
ALTER TABLE alerts ADD COLUMN paging_started_at timestamptz;

-- Alerts opened before this column were paged, or given up, by the code of
-- their time: the re-drive is not theirs.
UPDATE alerts SET paging_started_at = first_seen_at;

CREATE INDEX alerts_paging_not_started ON alerts (id) WHERE paging_started_at IS NULL;

-- Only pushes of their own (push/<id>: failures, agents' messages) are
-- started; a needs_input notification is delivered by its session's
-- debounce and keeps this NULL.
ALTER TABLE notifications ADD COLUMN push_started_at timestamptz;

UPDATE notifications SET push_started_at = coalesce(pushed_at, created_at) WHERE type <> 'needs_input';

CREATE INDEX notifications_push_not_started ON notifications (id)
    WHERE push_started_at IS NULL AND pushed_at IS NULL AND type <> 'needs_input';
