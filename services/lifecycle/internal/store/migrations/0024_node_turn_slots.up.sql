-- Per-runner-node turn slots (LC-38): each node reports its own limit
-- (RUNNER_TURN_SLOTS; NULL: none) when it starts; the slots in use and the
-- turns in line say which node they run on ('' for a spot sleeper's grant
-- until its turn asks, which counts on no node).
CREATE TABLE runner_node_turn_slots (
    node        text        PRIMARY KEY CHECK (node <> ''),
    slots       integer     CHECK (slots IS NULL OR slots >= 0),
    reported_at timestamptz NOT NULL
);
ALTER TABLE turn_slots ADD COLUMN node text NOT NULL DEFAULT '';
ALTER TABLE turn_slot_waiters ADD COLUMN node text NOT NULL DEFAULT '';
