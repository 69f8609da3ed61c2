-- Uncle edges: "uncle_session_id inspected session_id and queued or
-- interrupted it", which makes the uncle senior: an additional parent. A
-- table rather than a column because a session collects several uncles and
-- none is more principled to keep than another.
--
-- Both ends cascade from session_nodes: a deleted session takes its edges,
-- both ways, with it. That is where they differ from the spawn edge, which a
-- child keeps as recorded: nulling a parent pointer leaves a meaningful row,
-- nulling either end of an edge leaves a row that asserts nothing.
--
-- One writer (RecordUncleEdge) keeps the spawn and uncle edges together
-- acyclic; it serialises on a transaction-scoped advisory lock.
CREATE TABLE session_uncle_links (
    session_id       bigint      NOT NULL REFERENCES session_nodes (session_id) ON DELETE CASCADE,
    uncle_session_id bigint      NOT NULL REFERENCES session_nodes (session_id) ON DELETE CASCADE,
    entry_point      text        NOT NULL CHECK (entry_point <> ''),
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, uncle_session_id),
    CHECK (session_id <> uncle_session_id)
);

-- The primary key serves the walk up (uncles of X); this one the walk down
-- (sessions X is uncle of) and the cascade from the uncle's side.
CREATE INDEX session_uncle_links_uncle ON session_uncle_links (uncle_session_id, session_id);

-- Sessions lifecycle deleted. Deletion is final, but events may arrive out
-- of order or be redelivered: a snapshot of a deleted session must not bring
-- its node back.
CREATE TABLE session_node_tombstones (
    session_id bigint      PRIMARY KEY,
    deleted_at timestamptz NOT NULL DEFAULT now()
);
