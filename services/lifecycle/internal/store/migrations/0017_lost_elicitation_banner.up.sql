-- lost_elicitation was a sentence; it is now the banner object
-- {reason, request_id, summary, lost_at}. Every sentence written so far
-- was the expired-elicitation sweep's, so each becomes a stranded banner
-- with no request id (none was kept), its sentence as the summary and
-- the session's last change as when it was lost.
UPDATE sessions
SET markers = jsonb_set(markers, '{lost_elicitation}', jsonb_build_object(
    'reason', 'stranded',
    'summary', left(markers->>'lost_elicitation', 200),
    'lost_at', to_jsonb(updated_at)))
WHERE jsonb_typeof(markers->'lost_elicitation') = 'string';
