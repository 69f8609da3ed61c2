package drain_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

// Runs recorded on the Temporal dev server replay against today's code, so
// a change of the workflow's commands fails here instead of stranding the
// drains already running (such a change goes behind workflow.GetVersion):
//
//   - drain_session_not_found_retried.json: recorded before issue 20's
//     session-gone-ends-drain: lifecycle answered NotFound to all three
//     attempts, 30 s apart, and the drain paged as exhausted. Today a drain
//     ends at the first NotFound; one already running keeps its old course.
func TestRecordedRunsReplay(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/drain_session_not_found_retried.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(drain.Workflow, workflow.RegisterOptions{Name: drain.WorkflowName})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file), file)
	}
}
