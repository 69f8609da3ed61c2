package rules

import "slices"

// MCP tool groups a session is created with (mcp_tool_groups). They decide
// what the session's credentials may do, and so which tools its agent sees
// over MCP: every credential opens the self_session tools about its own
// session; each other group adds scopes (ToolGroupScopes).
const (
	// ToolGroupSelfSession is the self_session tools: read its own session,
	// edit its title and notes, set its heartbeat, archive itself. Every
	// credential has them, named or not.
	ToolGroupSelfSession = "self_session"
	// ToolGroupSessions is the sessions tools as an agent gets them:
	// read-only over every session, and start_session of children of its
	// own. Acting on another session's lifecycle stays with operator keys.
	ToolGroupSessions = "sessions"
)

// Session-credential scopes: principal.Scope* spells the same words (a
// lifecycle test holds the two together).
const (
	ScopeSelf          = "self"
	ScopeSessionsRead  = "sessions.read"
	ScopeSessionsStart = "sessions.start"
)

// ToolGroups are the groups a session may be created with.
func ToolGroups() []string { return []string{ToolGroupSelfSession, ToolGroupSessions} }

// DefaultToolGroups are a session's groups when its creator names none.
func DefaultToolGroups() []string { return []string{ToolGroupSessions} }

// toolGroupScopes are the scopes each group grants beyond ScopeSelf.
var toolGroupScopes = map[string][]string{
	ToolGroupSelfSession: nil,
	ToolGroupSessions:    {ScopeSessionsRead, ScopeSessionsStart},
}

// ToolGroupScopes are the scopes a credential of a session with groups
// carries: always ScopeSelf, then each known group's, once each, in a
// fixed order. Unknown groups grant nothing (they are refused at create).
func ToolGroupScopes(groups []string) []string {
	scopes := []string{ScopeSelf}
	for _, g := range ToolGroups() {
		if !slices.Contains(groups, g) {
			continue
		}
		for _, s := range toolGroupScopes[g] {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	return scopes
}

// SessionCredentialPrefix starts every session credential, so a surface
// tells one from an API key without a lookup (grpcserver.SessionTokenPrefix
// spells the same; a lifecycle test holds the two together).
const SessionCredentialPrefix = "zsc_"

// CredentialRefusedReason is the google.rpc.ErrorInfo reason lifecycle
// attaches when it refuses a session credential (Unauthenticated: unknown,
// or revoked and why), so a surface tells a refused credential from its
// own call failing.
const CredentialRefusedReason = "SESSION_CREDENTIAL_REFUSED"
