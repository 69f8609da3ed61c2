package domain

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Costs (docs/costs.md): what Zimmer itself puts into a session's context,
// in bytes, and what the runtime said the session's turns used. Each entry
// is of one kind; the Costs page, GET /api/v1/costs and get_costs sum them
// by day, by session and by kind.

// CostKind names what an entry counts.
type CostKind string

// The kinds. The prompt's parts are the prompt builder's (prompt.Part):
// session_hierarchy and human_messages are the spec's two lines of the
// provenance experiment, provenance_tool is what a session fetched of the
// same record on demand, kept off mcp_responses so the experiment cannot
// look free when the bytes merely moved. runtime is what the agent's
// runtime reported for a turn (tokens, cache, cost); inference and
// status_summary are Zimmer's own model calls — a title and category, a
// status-summary fork's turn — counted apart so their price is visible.
const (
	CostTurnText         CostKind = "turn_text"
	CostGoal             CostKind = "goal"
	CostSessionNotes     CostKind = "session_notes"
	CostSessionHierarchy CostKind = "session_hierarchy"
	CostHumanMessages    CostKind = "human_messages"
	CostMCPResponses     CostKind = "mcp_responses"
	CostProvenanceTool   CostKind = "provenance_tool"
	CostRuntime          CostKind = "runtime"
	CostInference        CostKind = "inference"
	CostStatusSummary    CostKind = "status_summary"
)

// CostKinds lists every kind, in the order a report shows them.
var CostKinds = []CostKind{
	CostTurnText, CostGoal, CostSessionNotes, CostSessionHierarchy, CostHumanMessages,
	CostMCPResponses, CostProvenanceTool, CostRuntime, CostInference, CostStatusSummary,
}

// ProvenanceTool is the MCP tool whose responses are CostProvenanceTool.
const ProvenanceTool = "get_session_provenance"

// MCPCostKind is the kind of an MCP tool's response bytes.
func MCPCostKind(tool string) CostKind {
	if tool == ProvenanceTool {
		return CostProvenanceTool
	}
	return CostMCPResponses
}

// Usage is what a runtime reported a model call used. CostUSD is the
// runtime's own figure (Claude Code's total_cost_usd); 0 when it reports
// none (Codex).
type Usage struct {
	InputTokens         int64
	OutputTokens        int64
	CacheReadTokens     int64
	CacheCreationTokens int64
	CostUSD             float64
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheCreationTokens: u.CacheCreationTokens + o.CacheCreationTokens,
		CostUSD: u.CostUSD + o.CostUSD,
	}
}

// CostEntry is one recorded cost. Key makes recording idempotent: an entry
// whose key is recorded already is not recorded again, so a retried
// activity (or RPC) counts once.
type CostEntry struct {
	Key       string
	SessionID int64
	// TurnID is the turn it belongs to; "" for an MCP response (the
	// gateway answers the session, not a turn) and an inference.
	TurnID string
	Kind   CostKind
	// Tool is the MCP tool of an MCP response.
	Tool  string
	Bytes int64
	Usage Usage
}

// TurnCostKey is the key of a turn's entry of kind: one per turn and kind.
func TurnCostKey(turnID string, kind CostKind) string { return "turn/" + turnID + "/" + string(kind) }

// PromptCosts are the entries of a turn's prompt: one per part it holds,
// its bytes. A status-summary fork's whole prompt is one status_summary
// entry instead: Zimmer's own call, not the session's context.
func PromptCosts(sessionID int64, turnID string, parts map[string]int, statusSummaryFork bool) []CostEntry {
	if statusSummaryFork {
		total := 0
		for _, n := range parts {
			total += n
		}
		return []CostEntry{{Key: TurnCostKey(turnID, CostStatusSummary) + "/prompt", SessionID: sessionID, TurnID: turnID,
			Kind: CostStatusSummary, Bytes: int64(total)}}
	}
	var out []CostEntry
	for _, k := range CostKinds {
		if n, ok := parts[string(k)]; ok {
			out = append(out, CostEntry{Key: TurnCostKey(turnID, k), SessionID: sessionID, TurnID: turnID, Kind: k, Bytes: int64(n)})
		}
	}
	return out
}

// UsageCost is the entry of what a turn's runtime reported: runtime, or
// status_summary for a status-summary fork's turn.
func UsageCost(sessionID int64, turnID string, u Usage, statusSummaryFork bool) CostEntry {
	kind := CostRuntime
	if statusSummaryFork {
		kind = CostStatusSummary
	}
	return CostEntry{Key: TurnCostKey(turnID, kind) + "/usage", SessionID: sessionID, TurnID: turnID, Kind: kind, Usage: u}
}

// MaxToolNameChars bounds an MCP response entry's tool name.
const MaxToolNameChars = 128

// MCPResponseCost is the entry of one MCP tool call's response: callID
// names the call, so the gateway's retried report counts once.
func MCPResponseCost(sessionID int64, tool string, bytes int64, callID string) (CostEntry, error) {
	var vs validation.Violations
	if sessionID < 1 {
		vs.Add("session_id", "must be the calling session's numeric id, got %d", sessionID)
	}
	if strings.TrimSpace(tool) == "" || len(tool) > MaxToolNameChars {
		vs.Add("tool", "must name the MCP tool that answered (at most %d characters)", MaxToolNameChars)
	}
	if bytes < 0 {
		vs.Add("bytes", "must be the response's size in bytes, 0 or more, got %d", bytes)
	}
	if strings.TrimSpace(callID) == "" || len(callID) > 128 {
		vs.Add("call_id", "must name the call (a UUID, at most 128 characters), so a retried report counts once")
	}
	if err := vs.Err(); err != nil {
		return CostEntry{}, err
	}
	return CostEntry{Key: "mcp/" + callID, SessionID: sessionID, Kind: MCPCostKind(tool), Tool: tool, Bytes: bytes}, nil
}

// InferenceCost is the entry of one attempt of an inference's model call:
// each attempt asked the model, so each is counted (attempt names it).
func InferenceCost(sessionID int64, runID string, attempt int32, promptBytes int, u Usage) CostEntry {
	return CostEntry{Key: fmt.Sprintf("inference/%s/%d", runID, attempt), SessionID: sessionID, Kind: CostInference,
		Bytes: int64(promptBytes), Usage: u}
}

// CostDateLayout is how a report's from and to are written: a UTC day.
const CostDateLayout = "2006-01-02"

// Bounds of a cost report's range.
const (
	// DefaultCostDays is the range a report covers when from is not
	// given: the 30 days ending with to.
	DefaultCostDays = 30
	// MaxCostDays bounds a report's range.
	MaxCostDays = 366
)

// CostQuery is a cost report's request, checked: From and To are UTC
// midnights, both days included.
type CostQuery struct {
	From, To  time.Time
	SessionID int64 // 0: every session
}

// End is the instant the range ends (exclusive): the midnight after To.
func (q CostQuery) End() time.Time { return q.To.AddDate(0, 0, 1) }

// ParseCostQuery checks a report's request: from and to are UTC days
// (YYYY-MM-DD; to defaults to today, from to the DefaultCostDays ending
// with to), from not after to and at most MaxCostDays apart; sessionID
// is "" or a session's numeric id.
func ParseCostQuery(from, to, sessionID string, now time.Time) (CostQuery, error) {
	var vs validation.Violations
	day := func(field, v string, def time.Time) time.Time {
		v = strings.TrimSpace(v)
		if v == "" {
			return def
		}
		t, err := time.Parse(CostDateLayout, v)
		if err != nil {
			vs.Add(field, "must be a day written YYYY-MM-DD (UTC), like %s; got %q", now.UTC().Format(CostDateLayout), v)
			return def
		}
		return t
	}
	today := now.UTC().Truncate(24 * time.Hour)
	q := CostQuery{To: day("to", to, today)}
	q.From = day("from", from, q.To.AddDate(0, 0, -(DefaultCostDays-1)))
	if len(vs) == 0 {
		switch {
		case q.From.After(q.To):
			vs.Add("from", "must not be after to (%s); got %s", q.To.Format(CostDateLayout), q.From.Format(CostDateLayout))
		case q.To.Sub(q.From) >= MaxCostDays*24*time.Hour:
			vs.Add("to", "must be at most %d days after from; narrow the range", MaxCostDays)
		}
	}
	if s := strings.TrimSpace(sessionID); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 1 {
			vs.Add("session_id", "must be a session's numeric id, got %q", s)
		}
		q.SessionID = id
	}
	if err := vs.Err(); err != nil {
		return CostQuery{}, err
	}
	return q, nil
}

// CostLine is one line of a report: the sums of the entries sharing its
// key (a day, a session, a kind, or a kind and tool).
type CostLine struct {
	Day       string
	SessionID int64
	Kind      CostKind
	Tool      string
	Bytes     int64
	Usage     Usage
	Entries   int64
}

// CostReport is a cost report: the total and the lines by day, session,
// kind and MCP tool.
type CostReport struct {
	Query     CostQuery
	Total     CostLine
	ByDay     []CostLine
	BySession []CostLine
	ByKind    []CostLine
	ByTool    []CostLine
}
