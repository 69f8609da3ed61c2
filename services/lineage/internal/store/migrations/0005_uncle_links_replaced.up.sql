-- An inversion replaces the uncle edge B → A by A → B. The row it writes
-- keeps the replaced edge's entry point and time, so that RetractUncleEdge,
-- undoing an inversion whose delivery failed, puts B → A back as it was
-- recorded rather than inventing where it came from. Both are NULL on an
-- edge that replaced nothing.
ALTER TABLE session_uncle_links
    ADD COLUMN replaced_entry_point text CHECK (replaced_entry_point <> ''),
    ADD COLUMN replaced_created_at timestamptz,
    ADD CONSTRAINT session_uncle_links_replaced_whole
        CHECK ((replaced_entry_point IS NULL) = (replaced_created_at IS NULL));
