UPDATE sessions
SET markers = jsonb_set(markers, '{lost_elicitation}', to_jsonb(coalesce(markers->'lost_elicitation'->>'summary', 'An MCP elicitation went unanswered.')))
WHERE jsonb_typeof(markers->'lost_elicitation') = 'object';
