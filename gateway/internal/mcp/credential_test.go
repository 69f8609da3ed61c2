package mcp_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// setupAs serves the MCP handler as the gateway does for a request that
// authenticated as p (auth.Require puts p on its context), its calls
// forwarding p to the fake lifecycle behind the real authorizer.
func setupAs(t *testing.T, p principal.Principal) *testBundle {
	t.Helper()
	fake := lifecyclefake.New()
	conn, err := grpcclient.Dial(grpctest.Serve(t, fake.Register), grpcclient.AsService("gateway", grpctest.InternalToken),
		grpc.WithChainUnaryInterceptor(auth.ForwardPrincipal))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	logs := &syncBuffer{}
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slog.New(slog.NewJSONHandler(logs, nil)),
		mcp.Options{Version: "test", Triggers: lifecyclev1.NewTriggerServiceClient(conn)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: logs}
}

func credential(session int64, scopes ...string) principal.Principal {
	return principal.Principal{Kind: principal.Session, SessionID: session, CredentialID: "0b5f6c1e-8d52-4a57-9f0e-2b7c3a1d4e5f", Scopes: scopes}
}

// A session credential sees exactly the self_session tools and the groups
// its scopes allow, whatever tool_groups the URL asks for.
func TestASessionCredentialSeesExactlyItsTools(t *testing.T) {
	t.Parallel()
	paths := []string{"/", "/?tool_groups=sessions", "/?tool_groups=self_session", "/?tool_groups=bogus", "/?tool_groups=sessions,self_session"}
	for _, tc := range []struct {
		scopes []string
		tools  []string
	}{
		{[]string{principal.ScopeSelf}, []string{"action_session", "get_session", "get_session_provenance", "send_push_notification",
			"wake_me_up_later", "wake_me_up_when_session_changes_state"}},
		{[]string{principal.ScopeSelf, principal.ScopeSessionsRead}, []string{"action_session", "get_alerts", "get_session", "get_session_provenance",
			"quick_search_sessions", "search_triggers", "send_push_notification", "wake_me_up_later", "wake_me_up_when_session_changes_state"}},
		{
			[]string{principal.ScopeSelf, principal.ScopeSessionsRead, principal.ScopeSessionsStart},
			[]string{"action_session", "get_alerts", "get_session", "get_session_provenance", "quick_search_sessions", "search_triggers",
				"send_push_notification", "start_session", "wake_me_up_later", "wake_me_up_when_session_changes_state"},
		},
	} {
		b := setupAs(t, credential(7, tc.scopes...))
		for _, path := range paths {
			c := b.connect(t, path)
			require.Equal(t, tc.tools, toolNames(t, c), "scopes %v, %s", tc.scopes, path)
			actions, _ := actionSessionSchema(t, c)
			require.Equal(t, selfActions, actions, "scopes %v, %s", tc.scopes, path)
		}
		require.NotContains(t, b.logs.String(), "unknown tool groups", "a credential's selection ignores tool_groups")
	}
}

func TestASessionCredentialCallsOnlyItsTools(t *testing.T) {
	t.Parallel()
	b := setupAs(t, credential(7, principal.ScopeSelf))
	c := b.connect(t, "/?tool_groups=sessions")

	for name, args := range map[string]map[string]any{
		"start_session":         {"prompt": "p", "git_root": "/g"},
		"quick_search_sessions": {"q": "x"},
	} {
		var req mcpgo.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(t.Context(), req)
		if err == nil { // a tool error result is as good as a protocol error
			require.True(t, res.IsError, textOf(res))
		}
	}
	for _, action := range []string{"pause", "transition", "bulk_archive", "unarchive", "fail", "sleep", "restart"} {
		res := call(t, c, "action_session", map[string]any{"action": action, "session_id": "7"})
		require.True(t, res.IsError, action)
		require.Equal(t, `action "`+action+`" is not open to a session credential, which offers only update_notes, update_title, set_heartbeat, archive `+
			"about its own session; acting on a session's lifecycle otherwise needs an operator key", textOf(res))
	}
	require.Empty(t, b.fake.Calls(), "no refused call reached lifecycle")
}

// Every call acts as the credential's session: acting_session_id is its
// own, and a different one is refused before anything reaches lifecycle.
func TestASessionCredentialActsAsItsSession(t *testing.T) {
	t.Parallel()
	b := setupAs(t, credential(7, principal.ScopeSelf))
	c := b.connect(t, "/")

	res := call(t, c, "action_session", map[string]any{"action": "archive", "session_id": "7", "acting_session_id": 8})
	require.True(t, res.IsError)
	require.Equal(t, "acting_session_id 8 is not your session: this credential acts as session #7; leave acting_session_id out", textOf(res))
	res = call(t, c, "action_session", map[string]any{"action": "archive", "session_id": "7", "acting_session_id": "seven"})
	require.True(t, res.IsError)
	require.Empty(t, b.fake.Calls(), "a refused declaration reached lifecycle")

	b.fake.Answer("ArchiveSession", &lifecyclev1.ArchiveSessionResponse{Session: &lifecyclev1.Session{Id: 7, Status: "archived"}}, nil)
	for _, args := range []map[string]any{
		{"action": "archive", "session_id": "7"},
		{"action": "archive", "session_id": "7", "acting_session_id": 7},
	} {
		res = call(t, c, "action_session", args)
		require.False(t, res.IsError, textOf(res))
		archive := lastCall(t, b.fake)
		require.Equal(t, "ArchiveSession", archive.Method)
		require.Equal(t, surface.MCPSelf, archive.Surface, "the archive line names the self-session server")
		require.True(t, proto.Equal(&lifecyclev1.ArchiveSessionRequest{SessionId: "7", ActingSessionId: proto.Int64(7)}, archive.Request), archive.Request)
	}

	// Requests without the field are unchanged.
	res = call(t, c, "action_session", map[string]any{"action": "update_notes", "session_id": "7", "notes": "n"})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "7", Notes: proto.String("n")}, lastCall(t, b.fake).Request))
}
