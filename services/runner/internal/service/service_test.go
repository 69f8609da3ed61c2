package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/retention"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
)

// The component test: the real service on a fresh database, without
// Temporal, served on a free port and stopped by cancelling its context.
func TestServiceServesUntilCancelled(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	servicetest.AssertServesUntilCancelled(t, svc.Host, "zimmer.runner.v1.RunnerService", "workspaces")
}

func TestServiceWorkerPollsItsTaskQueue(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = temporalAddr
	servicetest.AssertWorkerPolls(t, servicetest.New(t, service.New, cfg).Host, "runner")
}

// TestTranscriptRetentionIsScheduled: a runner node with Temporal ensures
// runner-transcripts-retention, the prune of finished turns' transcripts.
func TestTranscriptRetentionIsScheduled(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(t.Context(), func(k string) string {
		return map[string]string{"RUNNER_NODE": "retention-test", "RUNNER_WORKSPACES_DIR": t.TempDir(),
			"RUNNER_TRANSCRIPT_RETENTION": "48h"}[k]
	})
	require.NoError(t, err)
	cfg.Config = servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = servicetest.TemporalAddress(t)
	cfg.TemporalNamespace = "default"
	svc := servicetest.New(t, service.NewNode, cfg)

	desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), retention.ScheduleID(service.Name, "transcripts")).Describe(t.Context())
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, retention.WorkflowName(service.Name, "transcripts"), action.Workflow)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every, "48h runs hourly")

	// The login pools' turn records, likewise (RN-36).
	desc, err = svc.Temporal.ScheduleClient().GetHandle(t.Context(), retention.ScheduleID(service.Name, "account-turns")).Describe(t.Context())
	require.NoError(t, err)
	action, ok = desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, retention.WorkflowName(service.Name, "account-turns"), action.Workflow)
}
