package mcp_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// answerSlugs makes lifecycle resolve the slugs "sleeper" (#12) and
// "child" (#13), and the ids 12 and 13.
func answerSlugs(fake *lifecyclefake.Server) {
	fake.Handle("GetSession", func(m proto.Message) (proto.Message, error) {
		switch ref := m.(*lifecyclev1.GetSessionRequest).GetSessionId(); ref {
		case "sleeper", "12":
			return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 12, Slug: "sleeper", Status: "needs_input"}}, nil
		case "child", "13":
			return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 13, Slug: "child", Status: "running"}}, nil
		default:
			return nil, notFound(`"` + ref + `"`)
		}
	})
}

// lastRequest is the request of method's latest call, with the surface it
// declared.
func lastRequest(t *testing.T, fake *lifecyclefake.Server, method string) (proto.Message, string) {
	t.Helper()
	calls := fake.Calls(method)
	require.NotEmpty(t, calls, "no %s call reached lifecycle", method)
	return calls[len(calls)-1].Request, calls[len(calls)-1].Surface
}

func TestWakeMeUpLaterArmsAOneTimeWake(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answerSlugs(b.fake)
	c := b.connect(t, "/?tool_groups=triggers")
	fireAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b.fake.Answer("WakeMeUpLater", &lifecyclev1.WakeMeUpLaterResponse{
		Trigger: &lifecyclev1.Trigger{Id: 4, SessionId: 12, Kind: rules.TriggerKindOneTime, FireAt: timestamppb.New(fireAt), Source: "wake_me_up_later"},
		Session: &lifecyclev1.Session{Id: 12, Status: "waiting"},
		Message: "Session #12 sleeps until 2030-01-02T03:04:05Z.",
	}, nil)

	// By delay, by slug: the slug goes to lifecycle as given (it resolves
	// its own references).
	res := call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": "sleeper", "delay": "5m", "prompt": "check the build"})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeWakeUpScheduled), "\nSession #12 sleeps until 2030-01-02T03:04:05Z.\n\n```json\n"), text)
	require.True(t, strings.HasPrefix(text, "## Wake-up scheduled\n\n- **id:** 4\n- **session_id:** 12\n- **kind:** one_time\n"+
		"- **fire_at:** 2030-01-02T03:04:05Z\n- **source:** wake_me_up_later\n- **status:** waiting\n"), text)
	require.Contains(t, text, `"fire_at":"2030-01-02T03:04:05Z"`, "the JSON is the service's answer")
	req, via := lastRequest(t, b.fake, "WakeMeUpLater")
	require.True(t, proto.Equal(&lifecyclev1.WakeMeUpLaterRequest{SessionId: "sleeper", Delay: "5m", Prompt: "check the build"}, req), "%v", req)
	require.Equal(t, surface.MCP, via)

	// By wake_at in a timezone, a numeric id as a number: the text goes
	// to lifecycle as given, whose one rule (ScheduleWakeUp) reads it.
	res = call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": 12, "wake_at": "2030-01-02T04:04:05", "timezone": "Europe/Paris"})
	require.False(t, res.IsError, textOf(res))
	req, _ = lastRequest(t, b.fake, "WakeMeUpLater")
	require.True(t, proto.Equal(&lifecyclev1.WakeMeUpLaterRequest{SessionId: "12", WakeAtText: "2030-01-02T04:04:05", Timezone: "Europe/Paris"},
		req), "%v", req)

	// What the gateway can tell is wrong never reaches lifecycle.
	before := len(b.fake.Calls("WakeMeUpLater"))
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"delay": "5m"}, "invalid arguments: session_id is required: the session to wake, by numeric id or slug"},
		{map[string]any{"session_id": "12", "delay": 300}, "invalid arguments: delay must be a string"},
		{map[string]any{"session_id": "12", "when": "later"},
			`invalid arguments: unknown argument "when" (accepted: session_id, wake_at, delay, prompt, timezone)`},
	} {
		res = call(t, c, mcp.ToolWakeMeUpLater, tc.args)
		require.True(t, res.IsError, "%v", tc.args)
		require.Equal(t, tc.want, textOf(res), "%v", tc.args)
	}
	require.Len(t, b.fake.Calls("WakeMeUpLater"), before)

	// Lifecycle's refusals come back in its words: the rules (grace, one of
	// wake_at and delay, the session's state) are its.
	b.fake.Answer("WakeMeUpLater", nil, invalid("wake_at", "is inside the 30 s grace window: wake at least 30 s from now"))
	res = call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": "12", "delay": "10s"})
	require.True(t, res.IsError)
	require.Equal(t, "wake_at: is inside the 30 s grace window: wake at least 30 s from now", textOf(res))
	b.fake.Answer("WakeMeUpLater", nil, status.Error(codes.FailedPrecondition, "session #12 is failed: a wake-up needs needs_input, running or waiting"))
	res = call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": "12", "delay": "10m"})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "session #12 is failed")
}

func TestWakeMeUpWhenSessionChangesStateArmsAWatcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answerSlugs(b.fake)
	c := b.connect(t, "/?tool_groups=triggers")
	b.fake.Answer("WatchSession", &lifecyclev1.WatchSessionResponse{
		Trigger: &lifecyclev1.Trigger{Id: 5, SessionId: 12, Kind: rules.TriggerKindSessionState, WatchedSessionId: 13,
			States: []string{"needs_input", "failed"}, Source: "watch", Prompt: "child done?"},
	}, nil)

	// The watched session by slug is resolved to the id the request takes.
	for _, watched := range []any{"child", 13, "13"} {
		res := call(t, c, mcp.ToolWakeMeUpWhenSessionChangesState, map[string]any{
			"session_id": "sleeper", "watched_session_id": watched, "states": []any{"needs_input", "failed"}, "prompt": "child done?",
		})
		require.False(t, res.IsError, textOf(res))
		requireShape(t, res, mcp.OutcomeWatcherArmed)
		require.True(t, strings.HasPrefix(textOf(res), "## Watcher armed\n\n- **id:** 5\n- **session_id:** 12\n- **kind:** session_state\n"+
			"- **watched_session_id:** 13\n- **states:** needs_input or failed\n- **source:** watch\n- **prompt:** child done?\n"), textOf(res))
		req, via := lastRequest(t, b.fake, "WatchSession")
		require.True(t, proto.Equal(&lifecyclev1.WatchSessionRequest{SessionId: "sleeper", WatchedSessionId: 13,
			States: []string{"needs_input", "failed"}, Prompt: "child done?"}, req), "%v: %v", watched, req)
		require.Equal(t, surface.MCP, via)
	}

	before := len(b.fake.Calls("WatchSession"))
	res := call(t, c, mcp.ToolWakeMeUpWhenSessionChangesState, map[string]any{"session_id": "12", "watched_session_id": "nobody", "states": []any{"failed"}})
	require.True(t, res.IsError)
	require.Equal(t, `session "nobody" not found; check the id or slug (GET /api/v1/sessions lists sessions)`, textOf(res))
	res = call(t, c, mcp.ToolWakeMeUpWhenSessionChangesState, map[string]any{"session_id": "12", "watched_session_id": 13, "states": "failed"})
	require.True(t, res.IsError)
	require.Equal(t, "invalid arguments: states must be a list", textOf(res))
	require.Len(t, b.fake.Calls("WatchSession"), before)
}

// A session credential arms wakes of its own session: session_id is its
// own when left out, and naming another is refused before lifecycle.
func TestASessionCredentialArmsItsOwnWakes(t *testing.T) {
	t.Parallel()
	b := setupAs(t, credential(7, principal.ScopeSelf))
	c := b.connect(t, "/")

	res := call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"delay": "5s"})
	require.False(t, res.IsError, textOf(res))
	req, via := lastRequest(t, b.fake, "WakeMeUpLater")
	require.True(t, proto.Equal(&lifecyclev1.WakeMeUpLaterRequest{SessionId: "7", Delay: "5s"}, req), "%v", req)
	require.Equal(t, surface.MCPSelf, via)
	for _, own := range []any{7, "7"} {
		res = call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": own, "delay": "5s"})
		require.False(t, res.IsError, textOf(res))
	}

	res = call(t, c, mcp.ToolWakeMeUpWhenSessionChangesState, map[string]any{"watched_session_id": 9, "states": []any{"archived"}})
	require.False(t, res.IsError, textOf(res))
	req, via = lastRequest(t, b.fake, "WatchSession")
	require.True(t, proto.Equal(&lifecyclev1.WatchSessionRequest{SessionId: "7", WatchedSessionId: 9, States: []string{"archived"}}, req), "%v", req)
	require.Equal(t, surface.MCPSelf, via)

	before := len(b.fake.Calls())
	for tool, args := range map[string]map[string]any{
		mcp.ToolWakeMeUpLater:                   {"session_id": 8, "delay": "5m"},
		mcp.ToolWakeMeUpWhenSessionChangesState: {"session_id": "8", "watched_session_id": 9, "states": []any{"failed"}},
	} {
		res = call(t, c, tool, args)
		require.True(t, res.IsError, tool)
		require.Equal(t, "session_id 8 is not your session: this credential arms wakes of session #7 only; leave session_id out", textOf(res), tool)
	}
	require.Len(t, b.fake.Calls(), before, "a refused call reached lifecycle")

	// The operator's tools stay the operator's: neither is listed, and the
	// service refuses a call that got through anyway.
	names := toolNames(t, c)
	require.NotContains(t, names, mcp.ToolActionTrigger)
	require.NotContains(t, names, mcp.ToolSearchTriggers, "search_triggers needs sessions.read")
	res = call(t, c, mcp.ToolActionSession, map[string]any{"action": "pause_until", "session_id": "7", "wake_at": "2030-01-02T03:04:05Z"})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `action "pause_until" is not open to a session credential`)
}

func TestSearchTriggersListsTheArmedSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answerSlugs(b.fake)
	c := b.connect(t, "/?tool_groups=triggers")

	res := call(t, c, mcp.ToolSearchTriggers, map[string]any{})
	require.False(t, res.IsError, textOf(res))
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeArmedTriggers), "\nNo armed triggers match.\n\n```json\n"), textOf(res))

	b.fake.Answer("SearchTriggers", &lifecyclev1.SearchTriggersResponse{Triggers: []*lifecyclev1.Trigger{
		{Id: 4, SessionId: 12, Kind: rules.TriggerKindOneTime, FireAt: timestamppb.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), Source: "pause_until"},
		{Id: 5, SessionId: 12, Kind: rules.TriggerKindSessionState, WatchedSessionId: 13, States: []string{"archived"}, Source: "watch"},
	}}, nil)
	for _, ref := range []any{"sleeper", 12, "12"} {
		res = call(t, c, mcp.ToolSearchTriggers, map[string]any{"session_id": ref, "watched_session_id": "child", "kind": "session_state", "page_size": 10})
		require.False(t, res.IsError, textOf(res))
		require.Contains(t, textOf(res), "- **count:** 2\n")
		require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeArmedTriggers), "\nSoonest first:\n\n"+
			"- #4 wakes session #12 at 2030-01-02T03:04:05Z (pause_until)\n"+
			"- #5 wakes session #12 when session #13 is archived (watch)\n\n```json\n"), textOf(res))
		req, _ := lastRequest(t, b.fake, "SearchTriggers")
		require.True(t, proto.Equal(&lifecyclev1.SearchTriggersRequest{SessionId: 12, WatchedSessionId: 13, Kind: "session_state", PageSize: 10}, req),
			"%v: %v", ref, req)
	}
}

func TestActionTriggerCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=triggers")

	res := call(t, c, mcp.ToolActionTrigger, map[string]any{"action": "cancel", "session_id": "sleeper", "trigger_id": 1})
	require.False(t, res.IsError, textOf(res))
	requireShape(t, res, mcp.OutcomeTriggerCancelled)
	require.Contains(t, textOf(res), "- **id:** 1\n- **session_id:** 1\n- **kind:** one_time\n- **fire_at:** 2026-01-02T04:04:05Z\n")
	req, _ := lastRequest(t, b.fake, "CancelTrigger")
	require.True(t, proto.Equal(&lifecyclev1.CancelTriggerRequest{SessionId: "sleeper", TriggerId: 1}, req), "%v", req)

	before := len(b.fake.Calls())
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"session_id": "1", "trigger_id": 1}, "action is required; use one of cancel"},
		{map[string]any{"action": "fire", "session_id": "1", "trigger_id": 1}, `unknown action "fire"; use one of cancel`},
		{map[string]any{"action": "cancel", "session_id": "1"}, "invalid arguments: cancel needs trigger_id (search_triggers lists the armed triggers)"},
	} {
		res = call(t, c, mcp.ToolActionTrigger, tc.args)
		require.True(t, res.IsError, "%v", tc.args)
		require.Equal(t, tc.want, textOf(res), "%v", tc.args)
	}
	require.Len(t, b.fake.Calls(), before)

	b.fake.Answer("CancelTrigger", nil, status.Error(codes.NotFound, "trigger #1 of session #1 is not armed (it fired or was cancelled)"))
	res = call(t, c, mcp.ToolActionTrigger, map[string]any{"action": "cancel", "session_id": "1", "trigger_id": 1})
	require.True(t, res.IsError)
	require.Equal(t, "trigger #1 of session #1 is not armed (it fired or was cancelled)", textOf(res))
}

// action_session's refresh and pause_until are the operator's, through
// lifecycle's RefreshSession and the trigger service's PauseUntil.
func TestActionSessionRefreshAndPauseUntil(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")

	b.fake.Answer("RefreshSession", &lifecyclev1.RefreshSessionResponse{Session: &lifecyclev1.Session{Id: 3, Status: "waiting"},
		Message: "Session #3 is asleep until 2030-01-02T03:04:05Z (trigger #4): refresh leaves it be."}, nil)
	res := call(t, c, mcp.ToolActionSession, map[string]any{"action": "refresh", "session_id": "3"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeSessionRefreshed), "\nSession #3 is asleep until 2030-01-02T03:04:05Z (trigger #4): refresh leaves it be.\n")
	req, via := lastRequest(t, b.fake, "RefreshSession")
	require.True(t, proto.Equal(&lifecyclev1.RefreshSessionRequest{SessionId: "3"}, req), "%v", req)
	require.Equal(t, surface.MCP, via)

	b.fake.Answer("PauseUntil", &lifecyclev1.PauseUntilResponse{Session: &lifecyclev1.Session{Id: 3, Status: "waiting"},
		Trigger: lifecyclefake.Trigger(), Message: "Session #3 paused until 2030-01-02T03:04:05Z."}, nil)
	res = call(t, c, mcp.ToolActionSession, map[string]any{"action": "pause_until", "session_id": "3", "wake_at": "2030-01-02T03:04:05Z", "prompt": "go on"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeSessionPausedUntil), "\nSession #3 paused until 2030-01-02T03:04:05Z.\n")
	req, _ = lastRequest(t, b.fake, "PauseUntil")
	require.True(t, proto.Equal(&lifecyclev1.PauseUntilRequest{SessionId: "3", WakeAtText: "2030-01-02T03:04:05Z", Prompt: "go on"}, req), "%v", req)

	before := len(b.fake.Calls())
	res = call(t, c, mcp.ToolActionSession, map[string]any{"action": "pause_until", "session_id": "3"})
	require.True(t, res.IsError)
	require.Equal(t, `invalid arguments: pause_until needs wake_at (an ISO-8601 date-time, e.g. "2030-04-15T09:30:00", read in timezone)`, textOf(res))
	require.Len(t, b.fake.Calls(), before)
}

// The descriptions say what the rules are, from the rules: the grace
// window, the states a watcher waits for, what a wake does.
func TestTriggerToolsDescribeTheRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/")
	res, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	tools := map[string]mcpgo.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	grace := fmt.Sprintf("%d s grace window", rules.WakeGraceSeconds)

	wake := tools[mcp.ToolWakeMeUpLater]
	require.Contains(t, wake.Description, grace)
	require.Contains(t, wake.Description, "resumed with prompt as its turn")
	require.Contains(t, wake.Description, "Give exactly one of wake_at and delay")
	require.Nil(t, wake.InputSchema.Properties["wake_at"].(map[string]any)["format"], "a naive date-time is no RFC 3339 date-time")
	require.Contains(t, wake.InputSchema.Properties, "timezone")
	require.Empty(t, wake.InputSchema.Required, "session_id is a key's to give, a credential's to leave out")

	watch := tools[mcp.ToolWakeMeUpWhenSessionChangesState]
	require.Contains(t, watch.Description, strings.Join(rules.WatchableStates(), ", "))
	require.Contains(t, watch.Description, "A watcher fires once")
	require.ElementsMatch(t, []string{"watched_session_id", "states"}, watch.InputSchema.Required)
	items := watch.InputSchema.Properties["states"].(map[string]any)["items"].(map[string]any)
	require.ElementsMatch(t, rules.WatchableStates(), items["enum"])

	require.ElementsMatch(t, rules.TriggerKinds(), tools[mcp.ToolSearchTriggers].InputSchema.Properties["kind"].(map[string]any)["enum"])

	action := tools[mcp.ToolActionSession]
	require.Contains(t, action.Description, "pause_until: the operator's Pause Until")
	require.Contains(t, action.Description, grace)
	require.Contains(t, action.Description, "refresh: nudge a session that may be stuck")
}

// Without the trigger service the tools say so.
func TestTriggerToolsWithoutTheService(t *testing.T) {
	t.Parallel()
	fake := lifecyclefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slog.New(slog.DiscardHandler), mcp.Options{Version: "test"})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := (&testBundle{url: ts.URL, fake: fake}).connect(t, "/")
	for tool, args := range map[string]map[string]any{
		mcp.ToolWakeMeUpLater:                   {"session_id": "1", "delay": "5m"},
		mcp.ToolWakeMeUpWhenSessionChangesState: {"session_id": "1", "watched_session_id": 2, "states": []any{"failed"}},
		mcp.ToolSearchTriggers:                  {},
		mcp.ToolActionTrigger:                   {"action": "cancel", "session_id": "1", "trigger_id": 1},
		mcp.ToolActionSession:                   {"action": "pause_until", "session_id": "1", "wake_at": "2030-01-02T03:04:05Z"},
	} {
		res := call(t, c, tool, args)
		require.True(t, res.IsError, tool)
		require.Equal(t, "the trigger service is not configured on this gateway", textOf(res), tool)
	}
	require.Empty(t, fake.Calls())
}

// TestWakeMeUpLaterShowsTheServerTime: issue 23 rule 2. The tool's
// description says the server's time, rendered afresh on every
// tools/list, so an agent computes a wake time without a clock of its
// own.
func TestWakeMeUpLaterShowsTheServerTime(t *testing.T) {
	t.Parallel()
	fake := lifecyclefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	var (
		mu  sync.Mutex
		now = time.Date(2030, 4, 15, 9, 30, 0, 0, time.UTC)
	)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(conn), slog.New(slog.DiscardHandler),
		mcp.Options{Version: "test", Triggers: lifecyclev1.NewTriggerServiceClient(conn), Now: clock})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	b := &testBundle{url: ts.URL, fake: fake}

	described := func(path string) string {
		t.Helper()
		res, err := b.connect(t, path).ListTools(t.Context(), mcpgo.ListToolsRequest{})
		require.NoError(t, err)
		for _, tool := range res.Tools {
			if tool.Name == mcp.ToolWakeMeUpLater {
				return tool.Description
			}
		}
		t.Fatalf("%s lists no %s", path, mcp.ToolWakeMeUpLater)
		return ""
	}
	require.Contains(t, described("/"), "The server's time is now 2030-04-15T09:30:00 (Monday UTC).")

	mu.Lock()
	now = now.Add(90*time.Minute + 7*time.Second)
	mu.Unlock()
	for _, path := range []string{"/", "/?tool_groups=triggers"} {
		got := described(path)
		require.Contains(t, got, "The server's time is now 2030-04-15T11:00:07 (Monday UTC).", "rendered afresh (%s)", path)
		require.NotContains(t, got, "09:30:00", path)
	}
}

// TestWakeRefusalsCarryTheirCode: lifecycle's coded refusal (an
// ErrorInfo's reason) leads the tool error, as REST's body carries it.
func TestWakeRefusalsCarryTheirCode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/")
	st, err := status.New(codes.InvalidArgument, "wake_at: 2020-01-01T00:00:00 (UTC) is in the past").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wake_at", Description: "2020-01-01T00:00:00 (UTC) is in the past"}}},
		&errdetails.ErrorInfo{Reason: rules.WakeRefusedTooSoon, Domain: rules.ErrorDomain})
	require.NoError(t, err)
	b.fake.Answer("WakeMeUpLater", nil, st.Err())
	res := call(t, c, mcp.ToolWakeMeUpLater, map[string]any{"session_id": "12", "wake_at": "2020-01-01T00:00:00"})
	require.True(t, res.IsError)
	require.Equal(t, "wake_at_too_soon: wake_at: 2020-01-01T00:00:00 (UTC) is in the past", textOf(res))
}
