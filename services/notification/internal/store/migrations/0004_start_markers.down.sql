DROP INDEX notifications_push_not_started;
ALTER TABLE notifications DROP COLUMN push_started_at;

DROP INDEX alerts_paging_not_started;
ALTER TABLE alerts DROP COLUMN paging_started_at;
