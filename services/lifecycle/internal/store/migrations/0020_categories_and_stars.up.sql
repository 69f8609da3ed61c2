-- Categories are data (issue 28): a name unique without regard to case, a
-- dense 1-based position (kept dense by the store, which renumbers under
-- one lock), and the frozen (parked) flag "refresh all" skips.
CREATE TABLE categories (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    position   integer NOT NULL CHECK (position >= 1),
    frozen     boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX categories_name_key ON categories (lower(name));

-- A deleted category leaves its sessions uncategorized.
ALTER TABLE sessions
    ADD COLUMN category_id bigint REFERENCES categories (id) ON DELETE SET NULL,
    ADD COLUMN starred boolean NOT NULL DEFAULT false;
CREATE INDEX sessions_category_id_idx ON sessions (category_id) WHERE category_id IS NOT NULL;
CREATE INDEX sessions_starred_idx ON sessions (id) WHERE starred;
