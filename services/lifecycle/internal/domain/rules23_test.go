package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// TestResumeClearsTheStaleMCPFailureMarkersAndNothingElse (issue 23 rule
// 11): a resume, and the unarchive's restoration, remove the MCP-failure
// keys from custom_metadata — the original's five, no other — and name
// them, so the store removes exactly those.
func TestResumeClearsTheStaleMCPFailureMarkersAndNothingElse(t *testing.T) {
	t.Parallel()
	stale := func(st domain.Status) domain.Session {
		s := session(st)
		s.CustomMetadata = map[string]any{
			"should_fail_session": true, "mcp_connection_checked": true, "mcp_failed_servers": []any{"github"},
			"mcp_failure_reason": "github did not connect", "mcp_servers_status": map[string]any{"github": "failed"},
			"ticket": "ZIM-7",
		}
		s.Markers.MCPFailure = "github did not connect"
		return s
	}
	for _, tc := range []struct {
		from  domain.Status
		event domain.Event
	}{
		{domain.StatusFailed, domain.EventResume},
		{domain.StatusNeedsInput, domain.EventResume},
		{domain.StatusArchived, domain.EventUnarchiveToNeedsInput},
	} {
		s := stale(tc.from)
		out, err := domain.Apply(s, domain.Command{Event: tc.event}, env())
		require.NoError(t, err, tc.event)
		require.Equal(t, map[string]any{"ticket": "ZIM-7"}, out.Session.CustomMetadata, tc.event)
		require.ElementsMatch(t, rules.MCPFailureMetadataKeys(), out.MetadataRemoved, tc.event)
		require.Empty(t, out.Session.Markers.MCPFailure, tc.event)
		require.Len(t, s.CustomMetadata, 6, "%s: the session given is not changed", tc.event)
	}

	out, err := domain.Apply(session(domain.StatusNeedsInput), domain.Command{Event: domain.EventResume}, env())
	require.NoError(t, err)
	require.Empty(t, out.MetadataRemoved, "none to remove: nothing is rewritten")

	out, err = domain.Apply(stale(domain.StatusRunning), domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	require.Len(t, out.Session.CustomMetadata, 6, "only a resume clears them")
}

// TestClearTrashExpiryOnlyForTheArchiveThatHoldsNothing (issue 23 rule 17).
func TestClearTrashExpiryOnlyForTheArchiveThatHoldsNothing(t *testing.T) {
	t.Parallel()
	archivedAt, trash := now, now.Add(96*time.Hour)
	s := session(domain.StatusArchived)
	s.ArchivedAt, s.TrashAfter = &archivedAt, &trash

	got, cleared := domain.ClearTrashExpiry(s, archivedAt)
	require.True(t, cleared)
	require.Nil(t, got.TrashAfter)
	_, cleared = domain.ClearTrashExpiry(got, archivedAt)
	require.False(t, cleared, "cleared already")

	_, cleared = domain.ClearTrashExpiry(s, archivedAt.Add(-time.Hour))
	require.False(t, cleared, "another archive's clean-up: this archive keeps its deadline")
	restored := s
	restored.Status = domain.StatusNeedsInput
	_, cleared = domain.ClearTrashExpiry(restored, archivedAt)
	require.False(t, cleared, "restored since")
}
