-- Events this service has applied, keyed by the producer's event id: the
-- consumer half of at-least-once delivery.
CREATE TABLE inbox_events (
    event_id   uuid        PRIMARY KEY,
    topic      text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
