-- The default goes back to pushed; the sessions the up migration opted out
-- stay opted out (which of them were on before is not recorded).
ALTER TABLE sessions ALTER COLUMN push_notifications SET DEFAULT true;
