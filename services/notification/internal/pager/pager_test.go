package pager_test

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
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

func TestLogPagesAtErrorWithTheAlertFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := pager.Log{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	at := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

	require.NoError(t, p.Page(context.Background(), domain.Alert{
		ID: 7, DedupKey: "cleanup_running_job", Summary: "cleanup failed",
		Details: map[string]any{"error": "boom"}, Occurrences: 1,
		FirstSeenAt: at, LastSeenAt: at, DedupUntil: at.Add(15 * time.Minute),
	}), "the log line is the page")

	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "ERROR", line["level"])
	require.Equal(t, true, line["alert"])
	require.Equal(t, "cleanup_running_job", line["dedup_key"])
	require.Equal(t, "cleanup failed", line["summary"])
	require.EqualValues(t, 7, line["alert_id"])
	require.Equal(t, map[string]any{"error": "boom"}, line["details"])
}

func TestTemporalFallsBackToTheLogWhenTheWorkflowCannotStart(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, pager.WorkflowName, mock.Anything).
		Return(nil, errors.New("connection refused"))
	p := pager.NewTemporal(c, "notification", []sink.Sink{sink.Log{Logger: logger}}, pager.Log{Logger: logger}, logger)

	err := p.Page(context.Background(), domain.Alert{ID: 9, DedupKey: "set_archived_at", Summary: "archive failed"})
	require.ErrorContains(t, err, "start the page workflow alert/9: connection refused", "not started: the re-drive's")

	opts := c.Calls[0].Arguments.Get(1).(client.StartWorkflowOptions)
	require.Equal(t, "alert/9", opts.ID)
	require.Equal(t, "zimmer-notification", opts.TaskQueue)
	var lines []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var line map[string]any
		require.NoError(t, json.Unmarshal(raw, &line))
		lines = append(lines, line)
	}
	require.Len(t, lines, 2)
	require.Contains(t, lines[0]["msg"], "could not start the page workflow")
	require.Equal(t, true, lines[1]["alert"], "the page went to the log")
	require.Equal(t, "set_archived_at", lines[1]["dedup_key"])
}

// The re-drive's pager has no fallback: a start that fails is only
// answered; and a start that finds the page's workflow started is a
// started page.
func TestTemporalWithoutFallbackOnlyAnswers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == "alert/1" }), pager.WorkflowName, mock.Anything).
		Return(nil, errors.New("connection refused"))
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == "alert/2" }), pager.WorkflowName, mock.Anything).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "run-1"))
	p := pager.NewTemporal(c, "notification", nil, nil, logger)

	require.ErrorContains(t, p.Page(context.Background(), domain.Alert{ID: 1, Summary: "a"}), "connection refused")
	require.NoError(t, p.Page(context.Background(), domain.Alert{ID: 2, Summary: "b"}))
	require.Empty(t, buf.String(), "nothing paged through the log")
}
