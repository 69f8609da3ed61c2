package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// TestEveryLineACallWritesNamesItsPrincipal: the transition lines, the
// warnings a transition writes, the archive line, a deferred sleep, an
// edit's note and a refusal each end naming the principal that made the
// call, after the line as the spec words it; with no principal, the line
// is exactly the spec's.
func TestEveryLineACallWritesNamesItsPrincipal(t *testing.T) {
	t.Parallel()
	const by = "operator key …abcd"
	suffix := " (by " + by + ")"

	// The archive line, with its unresolved-PR clause: the spec's line,
	// whole, then who.
	s := session(domain.StatusNeedsInput)
	s.Goal = "open a pull request"
	s.PullRequests = []domain.PullRequest{trackedPR(2, domain.PullRequestOpen)}
	out, err := domain.Apply(s, domain.Command{Event: domain.EventArchive, Actor: domain.Actor{Kind: domain.ActorMCP, SessionID: 5225, By: by}}, env())
	require.NoError(t, err)
	require.Equal(t, []domain.TimelineEntry{{Kind: domain.TimelineTransition, Message: "[State Machine] Session moved to trash by session #5225 via the MCP API" +
		" — 1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: https://github.com/acme/app/pull/2" + suffix}}, out.Timeline)

	// A session archiving itself with its own credential.
	out, err = domain.Apply(session(domain.StatusRunning), domain.Command{Event: domain.EventArchive,
		Actor: domain.Actor{Kind: domain.ActorSelfSessionMCP, SessionID: 12, By: "session #12's credential"}}, env())
	require.NoError(t, err)
	require.Equal(t, "[State Machine] Session moved to trash by session #12 via the self-session MCP server (by session #12's credential)", out.Timeline[0].Message)

	// A transition line and every warning the transition writes.
	s = session(domain.StatusRunning)
	s.Goal = "open a pull request"
	out, err = domain.Apply(s, domain.Command{Event: domain.EventFail, FailureReason: "clone vanished", Actor: domain.Actor{By: "the runner"}}, env())
	require.NoError(t, err)
	require.Equal(t, []string{
		"[State Machine] running → failed (fail) (by the runner)",
		"[State Machine] failure reason: clone vanished (by the runner)",
		"[State Machine] goal mentions a pull request but no PR URL was recorded for this session yet (by the runner)",
	}, messages(out.Timeline))

	// A pause that executes a deferred sleep: both transitions, one caller.
	s = session(domain.StatusRunning)
	s.Markers.PendingSleep = true
	out, err = domain.Apply(s, domain.Command{Event: domain.EventPause, Actor: domain.Actor{By: "the runner"}}, env())
	require.NoError(t, err)
	require.Equal(t, []string{
		"[State Machine] running → needs_input (pause) (by the runner)",
		"[State Machine] needs_input → waiting (sleep) (by the runner)",
	}, messages(out.Timeline))

	// A deferred sleep.
	out, err = domain.Sleep(session(domain.StatusRunning), domain.Command{Actor: domain.Actor{By: by}}, env())
	require.NoError(t, err)
	require.Equal(t, []string{"[State Machine] sleep deferred: the session will go to waiting when its turn ends" + suffix}, messages(out.Timeline))

	// An edit's note.
	notes := "ship it"
	_, note, err := domain.Patch{Notes: &notes}.Apply(session(domain.StatusWaiting), now, "session #12's credential")
	require.NoError(t, err)
	require.Equal(t, "[Session] updated notes (by session #12's credential)", note.Message)

	// A refusal.
	_, err = domain.Apply(session(domain.StatusArchived), domain.Command{Event: domain.EventStart}, env())
	var refused *domain.TransitionError
	require.ErrorAs(t, err, &refused)
	line := domain.RefusalLine(refused, "admin key …wxyz")
	require.Equal(t, domain.TimelineRefusal, line.Kind)
	require.Equal(t, "[State Machine] refused: "+refused.Error()+" (by admin key …wxyz)", line.Message)

	// No principal: the spec's lines, unchanged.
	out, err = domain.Apply(session(domain.StatusWaiting), domain.Command{Event: domain.EventArchive, Actor: domain.Actor{Kind: domain.ActorSweep, Sweep: "stale-session sweep (untouched for 7 days)"}}, env())
	require.NoError(t, err)
	require.Equal(t, "[State Machine] Session moved to trash by Zimmer's stale-session sweep (untouched for 7 days)", out.Timeline[0].Message)
	require.Equal(t, "[State Machine] refused: "+refused.Error(), domain.RefusalLine(refused, "").Message)
}

func messages(lines []domain.TimelineEntry) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Message
	}
	return out
}
