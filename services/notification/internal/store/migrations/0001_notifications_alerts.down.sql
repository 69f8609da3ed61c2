DROP TABLE alerts;
DROP EXTENSION IF EXISTS btree_gist;
DROP TABLE notifications;
