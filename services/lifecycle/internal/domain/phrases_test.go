package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// TestTheSpecsArchiveLinesAreSaidVerbatim (issue 23 rule 21): each archive
// line session-lifecycle.md quotes ("The archive line names who did it")
// is the line Zimmer writes for that actor, word for word.
func TestTheSpecsArchiveLinesAreSaidVerbatim(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		actor domain.Actor
		spec  string
	}{
		{domain.Actor{Kind: domain.ActorMCP, SessionID: 5225}, "[State Machine] Session moved to trash by session #5225 via the MCP API"},
		{domain.Actor{Kind: domain.ActorWebUI}, "[State Machine] Session moved to trash by a user in the web UI"},
		{domain.StaleSessionSweep(domain.DefaultStaleAfter),
			"[State Machine] Session moved to trash by Zimmer's stale-session sweep (untouched for 7 days)"},
		{domain.Actor{}, "[State Machine] Session moved to trash by an unrecorded caller"},
		{domain.Actor{Kind: domain.ActorMCP}, "[State Machine] Session moved to trash by an undeclared MCP API caller"},
	} {
		require.Equal(t, tc.spec, domain.ArchiveLine(tc.actor, nil))
	}
	require.Equal(t, "[State Machine] Session moved to trash by session #5225 via the MCP API — 1 tracked pull request "+
		"had not reached a terminal state, so no merge notification will be delivered for it: https://github.com/tadasant/strad/pull/152",
		domain.ArchiveLine(domain.Actor{Kind: domain.ActorMCP, SessionID: 5225}, []string{"https://github.com/tadasant/strad/pull/152"}))
}
