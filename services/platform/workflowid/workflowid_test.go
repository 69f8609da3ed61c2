package workflowid_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// Every workflow of session 7 is session/7 or under session/7/.
func TestASessionsWorkflowsShareItsPrefix(t *testing.T) {
	t.Parallel()
	for want, got := range map[string]string{
		"session/7":                        workflowid.Session(7),
		"session/7/drain":                  workflowid.Drain(7),
		"session/7/debounce/needs-input":   workflowid.NeedsInputDebounce(7),
		"session/7/clone-cleanup":          workflowid.CloneCleanup(7),
		"session/7/clone-restore":          workflowid.CloneRestore(7),
		"session/7/wake/12":                workflowid.Wake(7, 12),
		"session/70/wake/12":               workflowid.Wake(70, 12),
		"session/70/debounce/needs-input":  workflowid.NeedsInputDebounce(70),
		"session/7/github-pr/acme/app/12":  workflowid.GitHubPullRequest(7, "acme", "app", 12),
		"session/7/infer":                  workflowid.Inference(7),
		"session/7/status-summary":         workflowid.StatusSummary(7),
		"session/7/status-summary-harvest": workflowid.StatusSummaryHarvest(7),
	} {
		require.Equal(t, want, got)
	}
}
