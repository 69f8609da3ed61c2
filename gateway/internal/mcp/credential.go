package mcp

import (
	"encoding/json"
	"fmt"
	"slices"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// scopeTools are the tools a session credential's scopes open beyond the
// self_session group: the sessions group as an agent gets it, reading any
// session (and the operational alerts and the armed triggers, which
// SearchTriggers opens to sessions.read) and starting children of its own.
// action_session stays narrowed to the self_session actions: acting on
// other sessions is an operator's. The inbox (get_notifications,
// action_notification) is the operator's: no scope opens it.
var scopeTools = map[string][]string{
	principal.ScopeSessionsRead:  {ToolQuickSearchSessions, ToolGetSession, ToolGetSessionProvenance, ToolGetAlerts, ToolSearchTriggers},
	principal.ScopeSessionsStart: {ToolStartSession},
}

// credentialSelection is what a session credential sees over MCP: exactly
// the self_session tools plus the tools its scopes open, whatever
// tool_groups the URL asks for, and every call acts as its session. The
// services enforce the same (each method's access class, lifecycle's
// checks of the session named); this is what the agent is shown.
func credentialSelection(p principal.Principal) selection {
	sel := selection{tools: map[string]bool{}, actions: slices.Clone(SelfSessionActions), session: p.SessionID}
	if p.Has(principal.ScopeSelf) {
		for _, t := range Groups["self_session"] {
			sel.tools[t] = true
		}
	}
	for scope, tools := range scopeTools {
		if p.Has(scope) {
			for _, t := range tools {
				sel.tools[t] = true
			}
		}
	}
	return sel
}

// actAs makes a call act as session: acting_session_id is the credential's
// session, and a different one the caller gave is refused.
func (a *args) actAs(session int64) *mcpgo.CallToolResult {
	if v, ok := a.raw["acting_session_id"]; ok {
		var declared int64
		if json.Unmarshal(v, &declared) != nil || declared != session {
			return mcpgo.NewToolResultError(fmt.Sprintf(
				"acting_session_id %s is not your session: this credential acts as session #%d; leave acting_session_id out", v, session))
		}
	}
	a.raw["acting_session_id"], _ = json.Marshal(session)
	return nil
}
