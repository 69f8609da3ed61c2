-- The W3C trace context of the request that made the change (PL-25): the
-- relay continues that trace when it hands the event over, so one trace
-- runs from a REST call through the consumer. Empty when tracing is off.
ALTER TABLE outbox_messages
    ADD COLUMN traceparent text NOT NULL DEFAULT '',
    ADD COLUMN tracestate  text NOT NULL DEFAULT '';
