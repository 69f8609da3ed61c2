ALTER TABLE sessions DROP COLUMN notes;
