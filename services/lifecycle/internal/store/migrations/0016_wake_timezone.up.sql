-- A one-time wake keeps the IANA zone its wall-clock time was asked in
-- (wake_me_up_later's and Pause Until's timezone), verbatim, so it is
-- echoed back as asked. The wakes armed before this were asked in UTC
-- (RFC 3339), which is what the default says.
ALTER TABLE wake_triggers ADD COLUMN timezone text NOT NULL DEFAULT 'UTC';
