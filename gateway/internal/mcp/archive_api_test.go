package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// Issue 23 rule 17: an MCP archive whose acting_session_id is not a number
// archives all the same, as an undeclared caller's (lifecycle's archive
// line then says "an undeclared MCP API caller"), and the gateway logs it.
func TestMCPArchiveWithANonNumericActingSessionArchivesAsUndeclared(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	b.fake.Answer("ArchiveSession", &lifecyclev1.ArchiveSessionResponse{Session: &lifecyclev1.Session{Id: 1, Status: "archived"}}, nil)

	res := call(t, c, "action_session", map[string]any{"action": "archive", "session_id": 1, "acting_session_id": "me, the router"})
	require.False(t, res.IsError, textOf(res))
	calls := b.fake.Calls("ArchiveSession")
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&lifecyclev1.ArchiveSessionRequest{SessionId: "1"}, calls[0].Request), "%v", calls[0].Request)
	require.Equal(t, surface.MCP, calls[0].Surface)
	require.Contains(t, b.logs.String(), "archiving as an undeclared caller")
	require.Contains(t, b.logs.String(), `me, the router`)

	res = call(t, c, "action_session", map[string]any{"action": "archive", "session_id": 1, "acting_session_id": "12"})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.ArchiveSessionRequest{SessionId: "1", ActingSessionId: proto.Int64(12)},
		b.fake.Calls("ArchiveSession")[1].Request), "a number in a string is still a declaration")
}
