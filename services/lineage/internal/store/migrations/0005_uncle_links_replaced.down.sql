ALTER TABLE session_uncle_links
    DROP CONSTRAINT session_uncle_links_replaced_whole,
    DROP COLUMN replaced_created_at,
    DROP COLUMN replaced_entry_point;
