ALTER TABLE turn_slot_waiters DROP COLUMN node;
ALTER TABLE turn_slots DROP COLUMN node;
DROP TABLE runner_node_turn_slots;
