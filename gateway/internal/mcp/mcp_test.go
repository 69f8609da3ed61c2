package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

const testKey = "test-key"

type testBundle struct {
	url  string
	fake *lifecyclefake.Server
	logs *syncBuffer
}

// setup serves the MCP handler over HTTP in front of the fake lifecycle
// service (which records calls and answers what a test sets up) on a real
// gRPC server.
func setup(t *testing.T) *testBundle {
	t.Helper()
	fake := lifecyclefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))

	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), logger,
		mcp.Options{Version: "test", Triggers: lifecyclev1.NewTriggerServiceClient(conn)})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: logs}
}

// connect returns an initialized streamable HTTP client for path, speaking
// the client's default protocol version.
func (b *testBundle) connect(t *testing.T, path string) *client.Client {
	t.Helper()
	return b.connectVersion(t, path, "")
}

func (b *testBundle) connectVersion(t *testing.T, path, version string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(b.url + path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(t.Context()))
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = version
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-test", Version: "1"}
	_, err = c.Initialize(t.Context(), req)
	require.NoError(t, err)
	return c
}

// invalid is the InvalidArgument lifecycle answers for a request it
// refuses field by field (field, reason, field, reason, ...), built as the
// services build it.
func invalid(fieldReasons ...string) error {
	verr := &validation.Error{}
	for i := 0; i+1 < len(fieldReasons); i += 2 {
		verr.Violations = append(verr.Violations, validation.FieldViolation{Field: fieldReasons[i], Reason: fieldReasons[i+1]})
	}
	return grpcstatus.InvalidArgument(verr)
}

// notFound is lifecycle's answer for a reference it does not know.
func notFound(shown string) error {
	return status.Errorf(codes.NotFound, "session %s not found; check the id or slug (GET /api/v1/sessions lists sessions)", shown)
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	names := make([]string, 0, len(res.Tools))
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) *mcpgo.CallToolResult {
	t.Helper()
	var req mcpgo.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	require.NoError(t, err)
	return res
}

func textOf(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestToolGroups(t *testing.T) {
	t.Parallel()
	b := setup(t)

	every := []string{"action_notification", "action_session", "action_trigger", "answer_elicitation", "get_alerts", "get_costs", "get_notifications", "get_session",
		"get_session_provenance", "manage_categories", "manage_enqueued_messages", "manage_slack_triggers", "quick_search_sessions", "search_triggers",
		"send_push_notification", "start_session", "wake_me_up_later", "wake_me_up_when_session_changes_state"}
	sessions := []string{"action_session", "answer_elicitation", "get_alerts", "get_costs", "get_session", "get_session_provenance", "manage_categories",
		"manage_enqueued_messages", "quick_search_sessions", "start_session"}
	self := []string{"action_session", "get_session", "get_session_provenance", "send_push_notification", "wake_me_up_later",
		"wake_me_up_when_session_changes_state"}
	tests := []struct {
		path string
		want []string
	}{
		{"/", every},
		{"/?tool_groups=", every},
		{"/?tool_groups=sessions", sessions},
		{"/?tool_groups=self_session", self},
		{"/?tool_groups=notifications", []string{"action_notification", "get_notifications", "send_push_notification"}},
		{"/?tool_groups=triggers", []string{"action_trigger", "manage_slack_triggers", "search_triggers", "wake_me_up_later",
			"wake_me_up_when_session_changes_state"}},
		{"/?tool_groups=self_session&tool_groups=sessions", []string{"action_session", "answer_elicitation", "get_alerts", "get_costs", "get_session", "get_session_provenance",
			"manage_categories", "manage_enqueued_messages", "quick_search_sessions", "send_push_notification", "start_session", "wake_me_up_later",
			"wake_me_up_when_session_changes_state"}},
		{"/?tool_groups=self_session,bogus", self},
		{"/?tool_groups=bogus", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, toolNames(t, b.connect(t, tt.path)))
		})
	}
}

// The stateless protocol core (2026-07-28, discover instead of initialize)
// and the initialize handshake both see the selected groups only.
func TestToolGroupsInEveryProtocolVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fake.Answer("GetSession", nil, notFound("#404"))

	for _, version := range []string{mcpgo.LATEST_PROTOCOL_VERSION, mcpgo.LATEST_LEGACY_PROTOCOL_VERSION} {
		c := b.connectVersion(t, "/?tool_groups=self_session", version)
		require.Equal(t, version, c.ProtocolVersion())
		require.Equal(t, []string{"action_session", "get_session", "get_session_provenance", "send_push_notification", "wake_me_up_later",
			"wake_me_up_when_session_changes_state"}, toolNames(t, c), version)
		res := call(t, c, "get_session", map[string]any{"session_id": "404"})
		require.True(t, res.IsError, version)
		require.Contains(t, textOf(res), "not found", version)
	}
}

func TestUnknownToolGroupsAreLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)

	b.connect(t, "/?tool_groups=sessions,bogus")
	require.Contains(t, b.logs.String(), `"msg":"MCP client asked for unknown tool groups; dropped them"`)
	require.Contains(t, b.logs.String(), `"unknown":["bogus"]`)
}

func TestToolOutsideGroupCannotBeCalled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=self_session")

	var req mcpgo.CallToolRequest
	req.Params.Name = "start_session"
	req.Params.Arguments = map[string]any{"prompt": "p", "git_root": "/g"}
	res, err := c.CallTool(t.Context(), req)
	if err == nil { // a tool error result is as good as a protocol error
		require.True(t, res.IsError, textOf(res))
	}
	require.Empty(t, b.fake.Calls("CreateSession"), "no session was created")
}

func TestStartThenGetSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	// What lifecycle answers: #1 as created from the first call, #2 (its
	// child) from the second.
	metadata, err := structpb.NewStruct(map[string]any{"ticket": "Z-1"})
	require.NoError(t, err)
	flaky := &lifecyclev1.Session{
		Id: 1, Status: "waiting", Title: "Flaky test", Slug: "flaky", Prompt: "fix the flaky test\nin CI", GitRoot: "/src/zimmer",
		Branch: "main", Genesis: "api", SchedulingClass: "spot", Precedence: 2, CustomMetadata: metadata,
		CreatedAt: timestamppb.New(lifecyclefake.Now), UpdatedAt: timestamppb.New(lifecyclefake.Now),
	}
	child := &lifecyclev1.Session{Id: 2, Status: "waiting", Prompt: "child", GitRoot: "/g", ParentSessionId: proto.Int64(1)}
	b.fake.Handle("GetSession", func(m proto.Message) (proto.Message, error) {
		switch ref := m.(*lifecyclev1.GetSessionRequest).GetSessionId(); ref {
		case "1", "flaky":
			return &lifecyclev1.GetSessionResponse{Session: flaky}, nil
		case "2":
			return &lifecyclev1.GetSessionResponse{Session: child}, nil
		default:
			return nil, notFound("#" + ref)
		}
	})

	b.fake.Answer("CreateSession", &lifecyclev1.CreateSessionResponse{Session: flaky}, nil)
	res := call(t, c, "start_session", map[string]any{
		"prompt": "fix the flaky test\nin CI", "git_root": "/src/zimmer", "title": "Flaky test",
		"slug": "flaky", "branch": "main", "precedence": 2, "scheduling_class": "spot",
		"custom_metadata": map[string]any{"ticket": "Z-1"},
	})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	requireShape(t, res, mcp.OutcomeSessionStarted)
	require.True(t, strings.HasPrefix(text, "## Session started\n\n- **id:** 1\n- **title:** Flaky test\n- **status:** waiting\n"), text)
	require.True(t, proto.Equal(&lifecyclev1.CreateSessionRequest{
		Prompt: "fix the flaky test\nin CI", GitRoot: "/src/zimmer", Title: "Flaky test", Slug: "flaky", Branch: "main",
		Precedence: 2, SchedulingClass: "spot", CustomMetadata: metadata,
	}, lastCall(t, b.fake).Request), "the arguments reach lifecycle as the request message")

	b.fake.Answer("CreateSession", &lifecyclev1.CreateSessionResponse{Session: child}, nil)
	parent := call(t, c, "start_session", map[string]any{"prompt": "child", "git_root": "/g", "parent_session_id": 1})
	require.False(t, parent.IsError, textOf(parent))
	require.Equal(t, int64(1), lastCall(t, b.fake).Request.(*lifecyclev1.CreateSessionRequest).GetParentSessionId())

	for _, ref := range []any{"1", "flaky", 1} {
		res = call(t, c, "get_session", map[string]any{"session_id": ref})
		require.False(t, res.IsError, textOf(res))
		require.Equal(t, fmt.Sprint(ref), lastCall(t, b.fake).Request.(*lifecyclev1.GetSessionRequest).GetSessionId(), "an id or a slug, as a string")
		text = textOf(res)
		require.True(t, strings.HasPrefix(text, "## Session #1 — Flaky test\n\n"), text)
		for _, want := range []string{
			"- **status:** waiting\n",
			"- **slug:** flaky\n",
			"- **git_root:** /src/zimmer\n",
			"- **branch:** main\n",
			"- **scheduling_class:** spot\n",
			"- **precedence:** 2\n",
			"- **created_at:** 2026-01-02T03:04:05Z\n",
			"### Prompt\n\n> fix the flaky test\n> in CI\n",
			"```json\n{\"session\":{\"id\":1,",
		} {
			require.Contains(t, text, want)
		}

		// The structured content is the REST JSON: numeric ids, snake_case.
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var got struct {
			Session map[string]any `json:"session"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&got))
		require.Equal(t, json.Number("1"), got.Session["id"])
		require.Equal(t, map[string]any{"ticket": "Z-1"}, got.Session["custom_metadata"])
	}

	res = call(t, c, "get_session", map[string]any{"session_id": "2"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "- **parent_session_id:** 1\n")
}

func TestToolErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		tool string
		args map[string]any
		fail error  // what lifecycle answers, if the call reaches it
		want string // the whole tool error text
	}{
		{
			name: "unknown session", tool: "get_session", args: map[string]any{"session_id": "999"}, fail: notFound("#999"),
			want: "session #999 not found; check the id or slug (GET /api/v1/sessions lists sessions)",
		},
		{
			name: "unknown slug", tool: "get_session", args: map[string]any{"session_id": "nope"}, fail: notFound(`"nope"`),
			want: `session "nope" not found; check the id or slug (GET /api/v1/sessions lists sessions)`,
		},
		{
			name: "missing session_id", tool: "get_session", args: map[string]any{},
			fail: invalid("session_id", "is required: a numeric id or a slug"),
			want: "session_id: is required: a numeric id or a slug",
		},
		{
			name: "missing prompt", tool: "start_session", args: map[string]any{"git_root": "/g"},
			fail: invalid("prompt", "is required: say what the agent should do"),
			want: "prompt: is required: say what the agent should do",
		},
		{
			name: "wrong argument types", tool: "start_session",
			args: map[string]any{"prompt": 5, "git_root": "/g", "precedence": 1.5, "custom_metadata": "x", "promt": "y"},
			want: `invalid arguments: unknown argument "promt" (accepted: prompt, git_root, branch, subdirectory, title, slug, goal, agent_root, agent_runtime, parent_session_id, scheduling_class, precedence, custom_metadata, mcp_tool_groups, push_notifications); ` +
				"prompt must be a string; precedence must be an integer between -2147483648 and 2147483647, got 1.5; custom_metadata must be a JSON object",
		},
		{
			name: "service unavailable", tool: "get_session", args: map[string]any{"session_id": "1"},
			fail: status.Error(codes.Unavailable, "connection refused"),
			want: "the lifecycle service is unavailable; retry shortly",
		},
		{
			name: "internal error hidden", tool: "get_session", args: map[string]any{"session_id": "1"},
			fail: status.Error(codes.Internal, "pq: secret detail"),
			want: "internal error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.FailWith(tt.fail)
			res := call(t, b.connect(t, "/"), tt.tool, tt.args)
			require.True(t, res.IsError)
			require.Equal(t, tt.want, textOf(res))
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A session id given as a JSON number reaches lifecycle digit for digit,
// even beyond 2^53, where a float64 would round it.
func TestNumericSessionIDKeepsEveryDigit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/")

	res := call(t, c, "get_session", map[string]any{"session_id": json.Number("9007199254740993")})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, "9007199254740993", lastCall(t, b.fake).Request.(*lifecyclev1.GetSessionRequest).GetSessionId())

	res = call(t, c, "get_session", map[string]any{"session_id": 0})
	require.True(t, res.IsError)
	require.Equal(t, "invalid arguments: session_id must be an integer between 1 and 9223372036854775807, got 0", textOf(res))
}
