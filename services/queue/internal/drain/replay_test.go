package drain_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

// Runs recorded on the Temporal dev server replay against today's code, so
// a change of the workflow's commands fails here. Nothing is deployed yet,
// so such a change needs no workflow.GetVersion gate (docs/temporal.md says
// from when it does):
//
//   - drain_session_not_found_retried.json: three attempts, 30 s apart,
//     each failing with an error that is not ErrTypeSessionGone (recorded
//     before the activity typed NotFound as that), and the drain paged as
//     exhausted: the course of every attempt's failure retrying cannot
//     tell apart.
func TestRecordedRunsReplay(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/drain_session_not_found_retried.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(drain.Workflow, workflow.RegisterOptions{Name: drain.WorkflowName})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file), file)
	}
}
