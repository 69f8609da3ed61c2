package clone

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Schedule makes the Temporal Schedule runner-trash-reaper run the reaper
// every interval (RUNNER_TRASH_REAP_INTERVAL), or brings an existing one
// to that interval. A run still going when the next is due is not doubled
// (the default overlap policy skips it).
func Schedule(ctx context.Context, c client.Client, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("the trash reaper's interval must be positive, got %s", interval)
	}
	return temporalx.EnsureSchedule(ctx, c, client.ScheduleOptions{
		ID:   ReaperScheduleID,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}},
		Action: &client.ScheduleWorkflowAction{
			ID:        ReaperScheduleID,
			Workflow:  ReaperWorkflowName,
			TaskQueue: rw.TaskQueue,
			// A run that outlives this is stuck (a node that never takes its
			// work is left after reapStartTimeout); the next one starts over.
			WorkflowExecutionTimeout: max(interval, time.Hour),
		},
	})
}
