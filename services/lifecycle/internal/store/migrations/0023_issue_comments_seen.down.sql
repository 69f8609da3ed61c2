ALTER TABLE pull_requests DROP COLUMN issue_comments_seen;
