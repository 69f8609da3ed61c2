package push_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/notification/internal/push"
)

// Runs recorded on the Temporal dev server replay against today's code, so
// a change of the workflows' commands fails here instead of stranding the
// workflows already running (such a change goes behind workflow.GetVersion):
//
//   - debounce_flap_push.json: pause 1, pause 2 half a second later (the
//     timer re-armed), a redelivery of pause 1 (ignored), the check as a
//     local activity, delivery to two sinks (webhook refused once, then
//     retried) and the notification recorded pushed.
//   - push_retried_sink.json: a failure's push/<id> to the same two sinks.
func TestRecordedRunsReplay(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/debounce_flap_push.json", "testdata/push_retried_sink.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(push.NeedsInputDebounce, workflow.RegisterOptions{Name: push.DebounceWorkflowName})
		r.RegisterWorkflowWithOptions(push.Push, workflow.RegisterOptions{Name: push.PushWorkflowName})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file), file)
	}
}
