-- Lineage's copy of each session, fed by lifecycle's events. No foreign keys
-- between nodes: events arrive in any order, so a child can be known before
-- its parent, and a parent lineage never heard of is still a recorded fact.
CREATE TABLE session_nodes (
    session_id         bigint      PRIMARY KEY,
    title              text        NOT NULL,
    agent_root         text        NOT NULL,
    status             text        NOT NULL,
    genesis            text        NOT NULL,
    scheduling_class   text        NOT NULL,
    -- The spawn edge as the session recorded it: the parent_session_id
    -- column, and the older custom_metadata.router_session_id. Both are kept
    -- verbatim; neither is ever rewritten from the other.
    parent_session_id  bigint,
    router_session_id  bigint,
    -- The tree is derived (column first, metadata as fallback) rather than
    -- backfilled: no migration of what a session said about itself, and a
    -- change of rule is a new expression, not a data repair.
    spawn_parent_id    bigint      GENERATED ALWAYS AS (COALESCE(parent_session_id, router_session_id)) STORED,
    -- lifecycle's updated_at of the stored snapshot; an older one never
    -- replaces a newer one.
    session_updated_at timestamptz NOT NULL
);

-- The downward walk (children of X, in id order) reads only this index.
-- Partial: roots are the common case and are never looked up as children.
CREATE INDEX session_nodes_spawn_parent
    ON session_nodes (spawn_parent_id, session_id)
    WHERE spawn_parent_id IS NOT NULL;
