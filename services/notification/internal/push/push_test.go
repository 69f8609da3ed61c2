package push_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/push"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

func TestStarterSignalsTheSessionsDebounce(t *testing.T) {
	t.Parallel()
	c := &mocks.Client{}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.On("SignalWithStartWorkflow", mock.Anything, "session/42/debounce/needs-input", push.SignalPaused, push.Paused{Marker: 7, At: at},
		mock.Anything, push.DebounceWorkflowName, mock.Anything).Return(nil, nil)
	s := push.NewStarter(c, "zimmer-notification", []sink.Sink{sink.Log{}}, 2*time.Second)

	require.NoError(t, s.Paused(context.Background(), 42, 7, at))
	opts := c.Calls[0].Arguments.Get(4).(client.StartWorkflowOptions)
	require.Equal(t, "session/42/debounce/needs-input", opts.ID)
	require.Equal(t, "zimmer-notification", opts.TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, opts.WorkflowIDReusePolicy, "a later pause starts a new debounce")
	require.Equal(t, push.DebounceInput{SessionID: 42, Debounce: 2 * time.Second, Sinks: []string{"log"}}, c.Calls[0].Arguments.Get(6))

	c.On("SignalWithStartWorkflow", mock.Anything, "session/43/debounce/needs-input", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, errors.New("connection refused"))
	err := s.Paused(context.Background(), 43, 1, at)
	require.ErrorContains(t, err, "signal session 43's needs-input debounce (pause 1): connection refused")
	require.ErrorIs(t, err, app.ErrNotStarted, "answered unavailable: lifecycle keeps the pause")

	def := push.NewStarter(c, "q", nil, 0)
	c.On("SignalWithStartWorkflow", mock.Anything, "session/44/debounce/needs-input", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, nil)
	require.NoError(t, def.Paused(context.Background(), 44, 1, at))
	require.Equal(t, push.DefaultDebounce, c.Calls[2].Arguments.Get(6).(push.DebounceInput).Debounce, "the default debounce is the spec's 60 s")
}

func TestStarterPushesToTheRoutesSinks(t *testing.T) {
	t.Parallel()
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, push.PushWorkflowName, mock.Anything).Return(nil, nil)
	s := push.NewStarter(c, "zimmer-notification", []sink.Sink{sink.Log{}, sink.Webhook{}}, time.Minute)
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	n := domain.Notification{ID: 9, Type: domain.TypeAgentMessage, SessionID: 3, Title: "Tests are green", Body: "212 passed", CreatedAt: at}

	require.NoError(t, s.Push(context.Background(), n))
	opts := c.Calls[0].Arguments.Get(1).(client.StartWorkflowOptions)
	require.Equal(t, "push/9", opts.ID)
	require.Equal(t, "zimmer-notification", opts.TaskQueue)
	require.Equal(t, push.Input{NotificationID: 9, Sinks: []string{"log", "webhook"}, Message: sink.Message{
		Kind: sink.KindPush, Type: "agent_message", Title: "Session 3: Tests are green", Body: "212 passed", SessionID: "3", DedupKey: "notification/9", Time: at,
	}}, c.Calls[0].Arguments.Get(3))
}

func TestLogPushesToTheLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := push.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	require.NoError(t, p.Push(context.Background(), domain.Notification{ID: 4, Type: domain.TypeFailure, SessionID: 8, Title: "Session 8 failed"}))
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, true, line["push"])
	require.Equal(t, "Session 8 failed", line["title"])
	require.Equal(t, "8", line["session_id"])
	require.Equal(t, "notification/4", line["dedup_key"])
}

// A push Temporal did not take is ErrNotStarted (retry shortly); one whose
// workflow was started already is a started push.
func TestStarterPushAnswersWhetherThePushStarted(t *testing.T) {
	t.Parallel()
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == "push/1" }), push.PushWorkflowName, mock.Anything).
		Return(nil, errors.New("connection refused"))
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == "push/2" }), push.PushWorkflowName, mock.Anything).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "run-1"))
	s := push.NewStarter(c, "zimmer-notification", nil, time.Minute)

	err := s.Push(context.Background(), domain.Notification{ID: 1, Type: domain.TypeFailure, Title: "t"})
	require.ErrorIs(t, err, app.ErrNotStarted)
	require.ErrorContains(t, err, "start the push of notification 1: connection refused")
	require.NoError(t, s.Push(context.Background(), domain.Notification{ID: 2, Type: domain.TypeFailure, Title: "t"}))
}
