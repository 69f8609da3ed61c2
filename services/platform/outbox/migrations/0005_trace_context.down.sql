ALTER TABLE outbox_messages DROP COLUMN traceparent, DROP COLUMN tracestate;
