DROP INDEX IF EXISTS sessions_spot_queue;
DROP TABLE IF EXISTS turn_slot_waiters;
DROP TABLE IF EXISTS turn_slots;
DROP TABLE IF EXISTS turn_slot_limit;
