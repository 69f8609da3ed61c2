-- Costs (docs/costs.md): what Zimmer injected into a session's context, in
-- bytes, and what the runtime reported a turn used. One row per entry;
-- key makes recording idempotent (a retried activity or report counts
-- once): turn/<turn_id>/<kind> for a turn's prompt parts and usage,
-- mcp/<call_id> for an MCP response, inference/<run_id>/<attempt> for an
-- inference's model call. Reports sum the rows by day, session and kind.
CREATE TABLE cost_entries (
    key                   text             PRIMARY KEY,
    session_id            bigint           NOT NULL,
    turn_id               text             NOT NULL DEFAULT '',
    kind                  text             NOT NULL,
    tool                  text             NOT NULL DEFAULT '',
    bytes                 bigint           NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    input_tokens          bigint           NOT NULL DEFAULT 0,
    output_tokens         bigint           NOT NULL DEFAULT 0,
    cache_read_tokens     bigint           NOT NULL DEFAULT 0,
    cache_creation_tokens bigint           NOT NULL DEFAULT 0,
    cost_usd              double precision NOT NULL DEFAULT 0,
    recorded_at           timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX cost_entries_recorded ON cost_entries (recorded_at);
CREATE INDEX cost_entries_session ON cost_entries (session_id, recorded_at);
