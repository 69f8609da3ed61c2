package clone

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Schedule makes the Temporal Schedule runner-trash-reaper run the reaper
// every interval (RUNNER_TRASH_REAP_INTERVAL), or brings an existing one
// to that interval. A run still going when the next is due is not doubled
// (the default overlap policy skips it).
func Schedule(ctx context.Context, c client.Client, interval time.Duration) error {
	return periodic.Ensure(ctx, c, periodic.Job{
		Service: runner, Name: reaperJob, Workflow: ReaperWorkflowName, TaskQueue: rw.TaskQueue, Every: interval,
		// A run that outlives this is stuck (a node that never takes its
		// work is left after reapStartTimeout); the next one starts over.
		RunTimeout: max(interval, time.Hour),
	})
}
