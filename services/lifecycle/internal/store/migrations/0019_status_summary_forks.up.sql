-- At most one status-summary fork of a session is at work at a time: a
-- second refresh while one runs (a fail right after a pause, a redelivered
-- effect, two runners) finds this row taken and is answered with the fork
-- already at work. A fork leaves the index when its harvest archives it
-- (status 3), so the next refresh may fork again. The marker keys are
-- Zimmer's own (rules.StatusSummaryKeyPrefix): no caller can set them.
CREATE UNIQUE INDEX sessions_one_status_summary_fork_at_work
    ON sessions ((custom_metadata ->> 'status_summary_source_id'))
    WHERE custom_metadata ? 'status_summary_source_id' AND status <> 3;
