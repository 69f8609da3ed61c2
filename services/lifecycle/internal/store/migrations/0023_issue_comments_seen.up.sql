-- The highest conversation (issue) comment id a pull request's watch passed
-- on (LC-38): GitHub numbers issue comments apart from review comments, so
-- comments_seen cannot stand for both. A row from before starts at 0, and
-- its watch's next reading passes on the conversation's comments once each
-- (each under its own queue key).
ALTER TABLE pull_requests ADD COLUMN issue_comments_seen bigint NOT NULL DEFAULT 0;
