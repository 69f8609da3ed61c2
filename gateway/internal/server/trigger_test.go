package server_test

import (
	"encoding/json"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// The triggers over REST: Pause Until, the session's armed triggers, cancel
// and refresh, each a thin call into the lifecycle process (TriggerService
// beside LifecycleService), a session addressed by id or slug, answered in
// the API's JSON and its error shape.
func TestTriggersOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	wakeAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	armed := &lifecyclev1.Trigger{Id: 4, SessionId: 12, Kind: "one_time", FireAt: timestamppb.New(wakeAt), Prompt: "go on",
		Source: "pause_until", CreatedAt: timestamppb.New(wakeAt.Add(-time.Hour)), WorkflowId: "wake/12/4"}
	b.fake.Answer("PauseUntil", &lifecyclev1.PauseUntilResponse{Trigger: armed, Session: &lifecyclev1.Session{Id: 12, Status: "waiting"},
		Message: "Session #12 paused until 2030-01-02T03:04:05Z."}, nil)

	resp := b.call(t, http.MethodPost, "/api/v1/sessions/sleeper/pause_until",
		`{"wake_at":"2030-01-02T04:04:05","timezone":"Europe/Paris","prompt":"go on"}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.PauseUntilRequest{SessionId: "sleeper", WakeAtText: "2030-01-02T04:04:05", Timezone: "Europe/Paris",
		Prompt: "go on"}, b.lastRequest(t, "PauseUntil")), "wake_at goes to lifecycle as text, whose one rule reads it")
	calls := b.fake.Calls("PauseUntil")
	require.Equal(t, surface.REST, calls[len(calls)-1].Surface)
	body := resp.json(t)
	require.Equal(t, "waiting", body["session"].(map[string]any)["status"])
	require.Equal(t, "Session #12 paused until 2030-01-02T03:04:05Z.", body["message"])
	trigger := body["trigger"].(map[string]any)
	require.Equal(t, json.Number("4"), trigger["id"], "ids are numbers")
	require.Equal(t, "2030-01-02T03:04:05Z", trigger["fire_at"])
	require.Equal(t, "wake/12/4", trigger["workflow_id"])

	// A wake_at that is no time is lifecycle's to refuse (the one rule,
	// ScheduleWakeUp): its 422 carries the refusal's code in the body.
	st, err := status.New(codes.InvalidArgument, `wake_at: "tomorrow" is not an ISO-8601 date-time`).WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "wake_at", Description: `"tomorrow" is not an ISO-8601 date-time`}}},
		&errdetails.ErrorInfo{Reason: "unparseable_wake_at", Domain: "lifecycle.zimmer"})
	require.NoError(t, err)
	b.fake.Answer("PauseUntil", nil, st.Err())
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/12/pause_until", `{"wake_at":"tomorrow"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	require.Equal(t, "unparseable_wake_at", resp.json(t)["code"], string(resp.body))
	require.Contains(t, resp.errorText(t), `wake_at: "tomorrow" is not an ISO-8601 date-time`)
	// The grace window is lifecycle's rule: its refusal is a 422 naming it.
	b.fake.Answer("PauseUntil", nil, invalid("wake_at", "is inside the 30 s grace window: wake at least 30 s from now"))
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/12/pause_until", `{"wake_at":"2030-01-02T03:04:05Z"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	msg, kind, messages := resp.problem(t)
	require.Equal(t, "Validation failed", kind)
	require.Equal(t, []string{"wake_at: is inside the 30 s grace window: wake at least 30 s from now"}, messages, msg)

	// A state refusal is a 422 naming what was refused.
	b.fake.Answer("PauseUntil", nil, status.Error(codes.FailedPrecondition, "session #12 is failed: Pause Until needs needs_input, running or waiting"))
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/12/pause_until", `{"wake_at":"2030-01-02T03:04:05Z"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, string(resp.body))
	msg, kind, _ = resp.problem(t)
	require.Equal(t, "Cannot pause until", kind)
	require.Equal(t, "session #12 is failed: Pause Until needs needs_input, running or waiting", msg)

	b.fake.Answer("ListTriggers", &lifecyclev1.ListTriggersResponse{Triggers: []*lifecyclev1.Trigger{armed,
		{Id: 5, SessionId: 12, Kind: "session_state", WatchedSessionId: 13, States: []string{"needs_input", "failed"}, Source: "watch"}}}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/sleeper/triggers", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.ListTriggersRequest{SessionId: "sleeper"}, b.lastRequest(t, "ListTriggers")))
	list := resp.json(t)["triggers"].([]any)
	require.Len(t, list, 2)
	watcher := list[1].(map[string]any)
	require.Equal(t, json.Number("13"), watcher["watched_session_id"])
	require.Equal(t, []any{"needs_input", "failed"}, watcher["states"])

	resp = b.call(t, http.MethodDelete, "/api/v1/sessions/sleeper/triggers/4", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.CancelTriggerRequest{SessionId: "sleeper", TriggerId: 4}, b.lastRequest(t, "CancelTrigger")))
	resp = b.call(t, http.MethodDelete, "/api/v1/sessions/sleeper/triggers/four", "")
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))
	b.fake.Answer("CancelTrigger", nil, status.Error(codes.NotFound, "trigger #4 of session #12 is not armed: it fired or was cancelled"))
	resp = b.call(t, http.MethodDelete, "/api/v1/sessions/12/triggers/4", "")
	require.Equal(t, http.StatusNotFound, resp.status, string(resp.body))
	require.Equal(t, "trigger #4 of session #12 is not armed: it fired or was cancelled", resp.errorText(t))

	// Refresh says whether it asked for a turn, and why not.
	b.fake.Answer("RefreshSession", &lifecyclev1.RefreshSessionResponse{Session: &lifecyclev1.Session{Id: 12, Status: "waiting"},
		Message: "session #12 is asleep on a wake still ahead of it (trigger #4): nothing to do"}, nil)
	for _, reqBody := range []string{"", "{}"} {
		resp = b.call(t, http.MethodPost, "/api/v1/sessions/sleeper/refresh", reqBody)
		require.Equal(t, http.StatusOK, resp.status, string(resp.body))
		require.True(t, proto.Equal(&lifecyclev1.RefreshSessionRequest{SessionId: "sleeper"}, b.lastRequest(t, "RefreshSession")))
		got := resp.json(t)
		require.Equal(t, false, got["refreshed"], "false is written, not left out")
		require.Equal(t, "session #12 is asleep on a wake still ahead of it (trigger #4): nothing to do", got["message"])
	}
}
