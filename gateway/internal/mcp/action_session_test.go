package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

var (
	allActions = []string{"follow_up", "pause", "sleep", "pause_until", "pause_into_spot_queue", "archive", "bulk_archive", "unarchive", "restart", "refresh", "fail",
		"update_title", "update_notes", "set_heartbeat", "update_push_notifications", "star", "unstar", "move_to_category", "transition"}
	selfActions = []string{"update_notes", "update_title", "set_heartbeat", "archive"}
)

// actionSessionSchema is action_session as tools/list shows it: its action
// enum and its argument names.
func actionSessionSchema(t *testing.T, c *client.Client) (actions, args []string) {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	for _, tool := range res.Tools {
		if tool.Name != "action_session" {
			continue
		}
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var schema struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema))
		require.Equal(t, []string{"action"}, schema.Required)
		for name := range schema.Properties {
			args = append(args, name)
		}
		return schema.Properties["action"].Enum, args
	}
	t.Fatal("action_session is not listed")
	return nil, nil
}

// lastCall is the fake's last call.
func lastCall(t *testing.T, fake *lifecyclefake.Server) lifecyclefake.Call {
	t.Helper()
	calls := fake.Calls()
	require.NotEmpty(t, calls)
	return calls[len(calls)-1]
}

func TestActionSessionEditsTitleNotesAndHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	updated := func(s *lifecyclev1.Session) {
		b.fake.Answer("UpdateSession", &lifecyclev1.UpdateSessionResponse{Session: s}, nil)
	}

	updated(&lifecyclev1.Session{Id: 1, Status: "waiting", Title: "Flaky test"})
	res := call(t, c, "action_session", map[string]any{"action": "update_title", "session_id": "1", "title": "Flaky test"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeTitleUpdated), "Session 1: title updated.")
	require.Contains(t, textOf(res), "- **id:** 1\n- **title:** Flaky test\n- **status:** waiting\n")
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "1", Title: proto.String("Flaky test")}, lastCall(t, b.fake).Request))

	updated(&lifecyclev1.Session{Id: 1, Status: "waiting", Title: "Flaky test", Notes: "tried X\nnext: Y"})
	res = call(t, c, "action_session", map[string]any{"action": "update_notes", "session_id": 1, "notes": "tried X\nnext: Y"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeNotesUpdated), "Session 1: notes updated.")
	require.Contains(t, textOf(res), "### Notes\n\n> tried X\n> next: Y\n")
	require.Contains(t, textOf(res), `"notes":"tried X\nnext: Y"`)
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "1", Notes: proto.String("tried X\nnext: Y")}, lastCall(t, b.fake).Request),
		"only notes are sent: the other fields are kept")

	updated(&lifecyclev1.Session{Id: 1, Status: "waiting", Title: "Flaky test"})
	res = call(t, c, "action_session", map[string]any{"action": "update_notes", "session_id": "1", "notes": ""})
	require.False(t, res.IsError, textOf(res))
	require.NotContains(t, textOf(res), "### Notes", `"" clears them`)
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "1", Notes: proto.String("")}, lastCall(t, b.fake).Request),
		`"" is sent, not left out`)

	b.fake.Answer("SetSessionHeartbeat", &lifecyclev1.SetSessionHeartbeatResponse{Session: &lifecyclev1.Session{
		Id: 1, HeartbeatEnabled: true, HeartbeatIntervalSeconds: 120,
	}}, nil)
	res = call(t, c, "action_session", map[string]any{"action": "set_heartbeat", "session_id": "1", "enabled": true, "interval_seconds": 120})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeHeartbeatSet), "Session 1: heartbeat on, every 120 s.")
	b.fake.Answer("SetSessionHeartbeat", &lifecyclev1.SetSessionHeartbeatResponse{Session: &lifecyclev1.Session{
		Id: 1, HeartbeatEnabled: false, HeartbeatIntervalSeconds: 120,
	}}, nil)
	res = call(t, c, "action_session", map[string]any{"action": "set_heartbeat", "session_id": "1", "enabled": false})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "Session 1: heartbeat off (interval 120 s when on).", "left-out fields are kept")
	require.True(t, proto.Equal(&lifecyclev1.SetSessionHeartbeatRequest{SessionId: "1", Enabled: proto.Bool(false)}, lastCall(t, b.fake).Request),
		"the interval left out is not sent, so lifecycle keeps it")

	for _, got := range b.fake.Calls() {
		require.Equal(t, surface.MCP, got.Surface, got.Method)
	}

	tests := []struct {
		name string
		args map[string]any
		fail error  // what lifecycle answers, if the call reaches it
		want string // the whole tool error text
	}{
		{
			name: "title missing", args: map[string]any{"action": "update_title", "session_id": "1"},
			want: `invalid arguments: update_title needs title ("" clears it)`,
		},
		{
			name: "notes not a string", args: map[string]any{"action": "update_notes", "session_id": "1", "notes": 5},
			want: "invalid arguments: notes must be a string",
		},
		{
			name: "notes too long", args: map[string]any{"action": "update_notes", "session_id": "1", "notes": strings.Repeat("n", 50_001)},
			fail: invalid("notes", "is longer than 50000 characters; keep the notes short and put the detail in the repository"),
			want: "notes: is longer than 50000 characters; keep the notes short and put the detail in the repository",
		},
		{
			name: "interval out of range", args: map[string]any{"action": "set_heartbeat", "session_id": "1", "interval_seconds": 10},
			want: "invalid arguments: interval_seconds must be an integer between 30 and 86400, got 10",
		},
		{
			name: "heartbeat with nothing to set", args: map[string]any{"action": "set_heartbeat", "session_id": "1"},
			want: "invalid arguments: set_heartbeat needs enabled (true or false), interval_seconds (30 to 86400) or both",
		},
		{
			name: "enabled not a boolean", args: map[string]any{"action": "set_heartbeat", "session_id": "1", "enabled": "yes"},
			want: "invalid arguments: enabled must be true or false",
		},
		{
			name: "unknown session", args: map[string]any{"action": "update_title", "session_id": "9", "title": "x"},
			fail: notFound("#9"),
			want: "session #9 not found; check the id or slug (GET /api/v1/sessions lists sessions)",
		},
		{
			name: "missing action", args: map[string]any{"session_id": "1"},
			want: "action is required; use one of " + strings.Join(allActions, ", "),
		},
		{
			name: "unknown action", args: map[string]any{"action": "launch", "session_id": "1"},
			want: `unknown action "launch"; use one of ` + strings.Join(allActions, ", "),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.FailWith(tt.fail)
			res := call(t, b.connect(t, "/?tool_groups=sessions"), "action_session", tt.args)
			require.True(t, res.IsError, textOf(res))
			require.Equal(t, tt.want, textOf(res))
			if tt.fail == nil {
				require.Empty(t, b.fake.Calls(), "refused before lifecycle was called")
			}
		})
	}
}

func TestActionSessionTransition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")

	b.fake.Answer("TransitionSession", &lifecyclev1.TransitionSessionResponse{
		Session: &lifecyclev1.Session{Id: 1, Status: "running"}, Message: "Session 1: waiting → running.",
	}, nil)
	res := call(t, c, "action_session", map[string]any{"action": "transition", "session_id": "1", "event": "start", "running_job_id": "job-1"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeTransitionApplied), "Session 1: waiting → running.")
	require.Contains(t, textOf(res), "- **status:** running\n")
	require.True(t, proto.Equal(&lifecyclev1.TransitionSessionRequest{SessionId: "1", Event: "start", RunningJobId: "job-1"}, lastCall(t, b.fake).Request))

	b.fake.Answer("TransitionSession", &lifecyclev1.TransitionSessionResponse{
		Session: &lifecyclev1.Session{Id: 1, Status: "needs_input", PausedBy: "harness"}, Message: "Session 1: running → needs_input.",
	}, nil)
	res = call(t, c, "action_session", map[string]any{
		"action": "transition", "session_id": "1", "event": "pause", "paused_by": "harness", "acting_session_id": 7,
	})
	require.False(t, res.IsError, textOf(res))
	got := lastCall(t, b.fake)
	require.Equal(t, surface.MCP, got.Surface)
	require.True(t, proto.Equal(&lifecyclev1.TransitionSessionRequest{
		SessionId: "1", Event: "pause", PausedBy: "harness", ActingSessionId: proto.Int64(7),
	}, got.Request), "%v", got.Request)

	// What lifecycle answers a second pause (the session is needs_input
	// now) and an event it does not know.
	b.fake.Handle("TransitionSession", func(m proto.Message) (proto.Message, error) {
		if event := m.(*lifecyclev1.TransitionSessionRequest).GetEvent(); event != "pause" {
			return nil, invalid("event", fmt.Sprintf("unknown event %q; use one of %s", event, strings.Join(rules.Events(), ", ")))
		}
		return nil, status.Error(codes.FailedPrecondition, "cannot pause session 1: it is needs_input, and pause is only possible from running")
	})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{
			name: "refused", args: map[string]any{"event": "pause"},
			want: "cannot pause session 1: it is needs_input, and pause is only possible from running",
		},
		{
			name: "unknown event", args: map[string]any{"event": "restart"},
			want: `event: unknown event "restart"; use one of ` + strings.Join(rules.Events(), ", "),
		},
		{
			name: "missing event", args: map[string]any{},
			want: "invalid arguments: transition needs event, one of " + strings.Join(rules.Events(), ", "),
		},
		{
			name: "system_recovery not a boolean", args: map[string]any{"event": "resume", "system_recovery": "yes"},
			want: "invalid arguments: system_recovery must be true or false",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.args["action"], tt.args["session_id"] = "transition", "1"
			res := call(t, c, "action_session", tt.args)
			require.True(t, res.IsError, textOf(res))
			require.Equal(t, tt.want, textOf(res))
		})
	}
}

func TestSelfSessionNarrowsActionSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	full := b.connect(t, "/?tool_groups=sessions")
	self := b.connect(t, "/?tool_groups=self_session")

	// Listed: the same tool name, only the self-session actions and their
	// arguments.
	actions, args := actionSessionSchema(t, self)
	require.Equal(t, selfActions, actions)
	require.ElementsMatch(t, []string{"action", "session_id", "title", "notes", "enabled", "interval_seconds", "force", "acting_session_id"}, args)
	for path, want := range map[string][]string{
		"/":                                   allActions,
		"/?tool_groups=sessions":              allActions,
		"/?tool_groups=self_session,sessions": allActions,
	} {
		actions, args := actionSessionSchema(t, b.connect(t, path))
		require.Equal(t, want, actions, path)
		require.Subset(t, args, []string{"session_ids", "event", "failure_reason", "system_recovery", "running_job_id", "paused_by"}, path)
	}

	// Refused: every other action, before anything reaches lifecycle.
	before := len(b.fake.Calls())
	for _, action := range []string{"pause", "transition", "bulk_archive", "unarchive", "fail"} {
		res := call(t, self, "action_session", map[string]any{"action": action, "session_id": "1"})
		require.True(t, res.IsError, action)
		require.Equal(t, `action "`+action+`" is not available on the self-session MCP server (tool_groups=self_session), which offers only `+
			"update_notes, update_title, set_heartbeat, archive; a session acts on others through the sessions tool group (tool_groups=sessions)", textOf(res))
	}
	res := call(t, self, "action_session", map[string]any{"action": "explode", "session_id": "1"})
	require.Equal(t, `unknown action "explode"; use one of update_notes, update_title, set_heartbeat, archive`, textOf(res))
	res = call(t, self, "action_session", map[string]any{"action": "archive", "session_ids": []any{"1"}})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `unknown argument "session_ids" (accepted: action, session_id, notes, title, enabled, interval_seconds, force, acting_session_id)`)
	require.Len(t, b.fake.Calls(), before, "no refused call reached lifecycle")

	// Allowed: the edits and archive, declared as the self-session surface
	// so the archive line names it.
	res = call(t, self, "action_session", map[string]any{"action": "update_notes", "session_id": "1", "notes": "n"})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, surface.MCPSelf, lastCall(t, b.fake).Surface)
	b.fake.Answer("ArchiveSession", &lifecyclev1.ArchiveSessionResponse{Session: &lifecyclev1.Session{Id: 1, Status: "archived"}}, nil)
	res = call(t, self, "action_session", map[string]any{"action": "archive", "session_id": "1", "acting_session_id": 1, "force": true})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "- **status:** archived\n")
	archive := lastCall(t, b.fake)
	require.Equal(t, "ArchiveSession", archive.Method)
	require.Equal(t, surface.MCPSelf, archive.Surface)
	require.True(t, proto.Equal(&lifecyclev1.ArchiveSessionRequest{SessionId: "1", ActingSessionId: proto.Int64(1), Force: true}, archive.Request))

	// The same archive through the full group is an MCP API call.
	res = call(t, full, "action_session", map[string]any{"action": "archive", "session_id": "2"})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, surface.MCP, lastCall(t, b.fake).Surface)
}
