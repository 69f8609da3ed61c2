package service_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// TestAPauseDrainsOnlyWhereThereIsSomethingToDrain (issue 23 rule 7): the
// pause's drain effect starts the after-pause drain only for a session left
// at rest awake with a message pending. This harness has no Temporal, so a
// drain the effect did start would be answered Unavailable.
func TestAPauseDrainsOnlyWhereThereIsSomethingToDrain(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)

	require.NoError(t, h.effect(t, 5, drainEffect(rules.StatusNeedsInput)), "an empty queue: nothing to drain, no drain")

	h.enqueue(t, 1, "for the wake's turn")
	require.NoError(t, h.effect(t, 1, drainEffect(rules.StatusWaiting)),
		"a pause that went straight to sleep: the wake's turn hands the message over, no drain")

	h.enqueue(t, 5, "waits on an idle session")
	requireCode(t, codes.Unavailable, h.effect(t, 5, drainEffect(rules.StatusNeedsInput)))
}
