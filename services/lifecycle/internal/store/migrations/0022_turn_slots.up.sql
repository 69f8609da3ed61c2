-- Turn slots (LC-36): the fleet-wide limit of concurrently running turns.
-- One row holds the admin's limit (NULL: LIFECYCLE_TURN_SLOTS decides); every
-- pass of the scheduler locks it, so grants are exact across replicas.
CREATE TABLE turn_slot_limit (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    slots      integer     CHECK (slots IS NULL OR slots >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO turn_slot_limit (singleton) VALUES (true);

-- A slot in use: one per session at most (a session runs one turn at a
-- time). turn_id is '' while granted to a spot sleeper being resumed.
CREATE TABLE turn_slots (
    session_id bigint      PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id    text        NOT NULL DEFAULT '',
    granted_at timestamptz NOT NULL
);

-- A turn waiting for a slot.
CREATE TABLE turn_slot_waiters (
    session_id bigint      PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id    text        NOT NULL,
    since      timestamptz NOT NULL
);

-- The spot queue's sleepers (status 1: waiting), read by every pass.
CREATE INDEX sessions_spot_queue ON sessions (id)
    WHERE status = 1 AND markers->>'paused_by' = 'spot_queue';
