ALTER TABLE sessions DROP COLUMN starred, DROP COLUMN category_id;
DROP TABLE categories;
