package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// ToolGetCosts reads the costs (GET /api/v1/costs): what Zimmer injected
// into sessions' contexts and what their runtimes reported using.
const ToolGetCosts = "get_costs"

// OutcomeCosts heads get_costs' answer.
const OutcomeCosts = "Costs"

// getCostsArgs are get_costs' arguments: GetCostsRequest's fields.
var getCostsArgs = fieldNames(&runnerv1.GetCostsRequest{})

func getCostsTool() mcpgo.Tool {
	return mcpgo.NewTool(ToolGetCosts,
		mcpgo.WithToolTitle("Get costs"),
		mcpgo.WithDescription("Sum what Zimmer injected into sessions' contexts, in bytes — each turn's prompt by part (turn_text, goal, "+
			"session_notes, session_hierarchy, human_messages) and the MCP responses sessions received (mcp_responses; "+
			"get_session_provenance's apart as provenance_tool) — and what the runtimes reported using (tokens in and out, cache "+
			"reads and writes, cost in USD: runtime), with Zimmer's own model calls apart (inference, status_summary). "+
			"In total and by day, session, kind and MCP tool, over a range of UTC days. Same as GET /api/v1/costs."),
		mcpgo.WithString("from", mcpgo.Description("The first day, YYYY-MM-DD (UTC); default: 29 days before `to`.")),
		mcpgo.WithString("to", mcpgo.Description("The last day, YYYY-MM-DD (UTC), included; default: today. At most 366 days after `from`.")),
		mcpgo.WithString("session_id", mcpgo.Description(`Only this session's costs: its numeric id (e.g. "42") or its slug.`)),
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithOpenWorldHintAnnotation(false),
	)
}

func (t *tools) getCosts(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	a := readArgs(req, getCostsArgs)
	in := &runnerv1.GetCostsRequest{}
	a.into(in, getCostsArgs...)
	if res := a.problem(); res != nil {
		return res, nil
	}
	if t.runner == nil {
		return mcpgo.NewToolResultError("the runner service is not configured on this gateway; costs are unknown"), nil
	}
	r, err := t.runner.GetCosts(ctx, in)
	if err != nil {
		return t.failureFrom(ctx, ToolGetCosts, "runner", err), nil
	}
	tot := r.GetTotal()
	lead := outcome(OutcomeCosts).field("from", r.GetFrom()).field("to", r.GetTo()).field("bytes", tot.GetBytes()).
		field("input_tokens", tot.GetInputTokens()).field("output_tokens", tot.GetOutputTokens()).
		field("cache_read_tokens", tot.GetCacheReadTokens()).field("cache_creation_tokens", tot.GetCacheCreationTokens()).
		field("cost_usd", fmt.Sprintf("%.4f", tot.GetCostUsd()))
	var b strings.Builder
	if len(r.GetByKind()) == 0 {
		b.WriteString("Nothing was recorded in this range.")
	} else {
		b.WriteString("By kind:\n")
		for _, l := range r.GetByKind() {
			fmt.Fprintf(&b, "- %s: %d bytes, %d in / %d out tokens, $%.4f\n", l.GetKind(), l.GetBytes(), l.GetInputTokens(), l.GetOutputTokens(), l.GetCostUsd())
		}
	}
	return t.jsonResult(ctx, lead.say(b.String()), r), nil
}

// mcpCostTimeout bounds reporting one tool call's response bytes.
const mcpCostTimeout = 10 * time.Second

// countResponses reports, for each tool call a session credential made,
// the bytes of the response it received (its JSON), to the runner's cost
// entries (docs/costs.md: mcp_responses, provenance_tool). The report is
// the gateway's own call (its service identity, never the credential) and
// is made after the answer, so a runner that does not answer costs the
// agent nothing but the count, which is logged.
func (t *tools) countResponses(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := next(ctx, req)
		p, ok := principal.FromContext(ctx)
		if res == nil || t.runner == nil || !ok || p.Kind != principal.Session {
			return res, err
		}
		body, merr := json.Marshal(res)
		if merr != nil {
			return res, err
		}
		report := &runnerv1.RecordMcpResponseRequest{SessionId: p.SessionID, Tool: req.Params.Name, Bytes: int64(len(body)), CallId: uuid.NewString()}
		go t.reportCost(report)
		return res, err
	}
}

// reportCost sends one report, asking again (the same call_id: counted
// once) while the runner does not answer.
func (t *tools) reportCost(report *runnerv1.RecordMcpResponseRequest) {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		// A context of its own: no client principal travels with it, so
		// the runner sees the gateway.
		ctx, cancel := context.WithTimeout(context.Background(), mcpCostTimeout)
		_, err = t.runner.RecordMcpResponse(ctx, report)
		cancel()
		if err == nil {
			return
		}
	}
	t.logger.Warn("count an MCP response's bytes", "session_id", report.GetSessionId(), "tool", report.GetTool(), "error", err)
}
