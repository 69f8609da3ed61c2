package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func deliveryEnv() domain.Env {
	e := env()
	e.FreshJobID = "delivery/fresh"
	return e
}

func deliver(mode domain.DeliveryMode) domain.DeliverCommand {
	return domain.DeliverCommand{DeliveryID: "queue/message/12", Prompt: "rebase it", Mode: mode,
		What: "queued message #12", By: "the queue"}
}

// TestDeliverToIdleIsAResume: a session at rest resumes exactly as a
// restart does — the markers a resume clears, the drain budget included,
// wake-ups cancelled — under the job drawn for it, and asks the runner for
// the turn with the prompt.
func TestDeliverToIdleIsAResume(t *testing.T) {
	t.Parallel()
	for _, st := range []domain.Status{domain.StatusWaiting, domain.StatusNeedsInput} {
		s := session(st)
		s.Goal = "old goal"
		s.Markers.PausedBy, s.Markers.DrainAttempts, s.Markers.MCPFailure = "user", 2, "github down"
		cmd := deliver(domain.DeliverToIdle)
		cmd.Goal = "new goal"

		out, refused, err := domain.Deliver(s, cmd, deliveryEnv())
		require.NoError(t, err)
		require.Nil(t, refused)
		require.Equal(t, []domain.Event{domain.EventResume}, out.Applied)
		require.Equal(t, st, out.From)
		require.Equal(t, domain.StatusRunning, out.Session.Status)
		require.Equal(t, "delivery/fresh", out.Session.Markers.RunningJobID)
		require.True(t, out.AsksForTurn)
		require.Equal(t, "rebase it", out.TurnPrompt)
		require.Equal(t, "new goal", out.Session.Goal)
		require.Empty(t, out.Session.Markers.PausedBy)
		require.Zero(t, out.Session.Markers.DrainAttempts, "each idle spell gets its own drain budget")
		require.Empty(t, out.Session.Markers.MCPFailure)
		require.Equal(t, &now, out.Session.ElapsedSince)
		require.Contains(t, effectNames(out), kinds(domain.CancelWakes{})[0])
		for _, e := range out.Effects {
			if cancel, ok := e.(domain.CancelWakes); ok {
				require.Equal(t, false, cancel.Preserve, "a delivery is a deliberate resume")
			}
		}
		require.Equal(t, []domain.TimelineEntry{
			{Kind: domain.TimelineTransition, Message: "[State Machine] " + st.String() + " → running (resume) (by the queue)"},
			{Kind: domain.TimelineNote, Message: "[Queue] delivered queued message #12 as the next turn; it set the session's goal (by the queue)"},
		}, out.Timeline)
	}
}

// TestHandoverAndAfterInterruptReplaceTheTurnWithoutATransition: a running
// session's turn is replaced in place; only after an interrupt is the
// runner asked for the turn (a handover's runner runs it itself).
func TestHandoverAndAfterInterruptReplaceTheTurnWithoutATransition(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Goal = "kept"
	s.Markers.RunningJobID = "session-5/turn-3"
	s.Markers.NeedsInputCount = 4

	handover := deliver(domain.DeliverHandover)
	handover.FromJobID = "session-5/turn-3"
	out, refused, err := domain.Deliver(s, handover, deliveryEnv())
	require.NoError(t, err)
	require.Nil(t, refused)
	require.Empty(t, out.Applied, "no transition: no needs_input flap")
	require.Empty(t, out.Effects, "no push, no session_needs_input trigger")
	require.Equal(t, domain.StatusRunning, out.From)
	require.Equal(t, domain.StatusRunning, out.Session.Status)
	require.Equal(t, "delivery/fresh", out.Session.Markers.RunningJobID)
	require.Equal(t, int64(4), out.Session.Markers.NeedsInputCount)
	require.Equal(t, "kept", out.Session.Goal, "no goal given: the session's stays")
	require.Equal(t, now, out.Session.UpdatedAt)
	require.False(t, out.AsksForTurn, "the runner that asked runs the prompt itself")
	require.Empty(t, out.TurnPrompt)
	require.Equal(t, []domain.TimelineEntry{{Kind: domain.TimelineNote,
		Message: "[Queue] delivered queued message #12 as the next turn (handed over as turn session-5/turn-3 ended) (by the queue)"}}, out.Timeline)

	out, refused, err = domain.Deliver(s, deliver(domain.DeliverAfterInterrupt), deliveryEnv())
	require.NoError(t, err)
	require.Nil(t, refused)
	require.Empty(t, out.Applied)
	require.Equal(t, "delivery/fresh", out.Session.Markers.RunningJobID)
	require.True(t, out.AsksForTurn)
	require.Equal(t, "rebase it", out.TurnPrompt)
	require.Equal(t, "[Queue] delivered queued message #12 as the next turn (after interrupting the running turn) (by the queue)", out.Timeline[0].Message)
}

// TestDeliveryRefusals: each refusal, in each mode it applies to, is an
// answer naming the session — never an error, never an outcome.
func TestDeliveryRefusals(t *testing.T) {
	t.Parallel()
	with := func(st domain.Status, edit func(*domain.Markers)) domain.Session {
		s := session(st)
		s.Markers.RunningJobID = map[bool]string{true: "session-5/turn-3"}[st == domain.StatusRunning]
		if edit != nil {
			edit(&s.Markers)
		}
		return s
	}
	unstarted := func(prompt string, elapsed *time.Time) domain.Session {
		s := session(domain.StatusWaiting)
		s.Prompt, s.ElapsedSince = prompt, elapsed
		return s
	}
	blocked := func(m *domain.Markers) { m.BlockedOnElicitation = true }
	parked := func(m *domain.Markers) { m.AuthOutageReason = "quota exhausted" }
	mcpRetry := func(m *domain.Markers) { m.PausedBy = domain.PausedByMCPRetry }
	idle, handover, interrupt := domain.DeliverToIdle, domain.DeliverHandover, domain.DeliverAfterInterrupt

	for _, tt := range []struct {
		name      string
		s         domain.Session
		mode      domain.DeliveryMode
		from      string
		automatic bool
		want      domain.DeliveryRefusal // 0: delivered
		words     string
	}{
		{"idle to running", with(domain.StatusRunning, nil), idle, "", false, domain.RefusedBusy, "session 5 is running"},
		{"idle to archived", with(domain.StatusArchived, nil), idle, "", false, domain.RefusedClosed, "is archived"},
		{"idle to failed", with(domain.StatusFailed, nil), idle, "", false, domain.RefusedClosed, "restart it"},
		{"handover to archived", with(domain.StatusArchived, nil), handover, "j", true, domain.RefusedClosed, "is archived"},
		{"idle to blocked", with(domain.StatusNeedsInput, blocked), idle, "", false, domain.RefusedBlockedOnElicitation, "elicitation"},
		{"interrupt to blocked", with(domain.StatusNeedsInput, blocked), interrupt, "", false, domain.RefusedBlockedOnElicitation, "second one"},
		{"automatic idle to parked", with(domain.StatusNeedsInput, parked), idle, "", true, domain.RefusedAuthOutage, "quota exhausted"},
		{"caller's idle to parked", with(domain.StatusNeedsInput, parked), idle, "", false, 0, ""},
		{"automatic handover of parked", with(domain.StatusRunning, parked), handover, "session-5/turn-3", true, domain.RefusedAuthOutage, "outage"},
		{"automatic idle to mcp_retry", with(domain.StatusNeedsInput, mcpRetry), idle, "", true, domain.RefusedMCPRetry, "MCP retry"},
		{"caller's idle to mcp_retry", with(domain.StatusNeedsInput, mcpRetry), idle, "", false, 0, ""},
		{"handover to idle", with(domain.StatusNeedsInput, nil), handover, "session-5/turn-3", true, domain.RefusedBusy, "no turn to hand over"},
		{"handover from a stale job", with(domain.StatusRunning, nil), handover, "session-5/turn-2", true, domain.RefusedBusy, `not "session-5/turn-2"`},
		{"handover from the running job", with(domain.StatusRunning, nil), handover, "session-5/turn-3", true, 0, ""},
		{"interrupt to idle", with(domain.StatusWaiting, nil), interrupt, "", false, domain.RefusedBusy, "deliver to it as an idle session"},
		{"interrupt to running", with(domain.StatusRunning, nil), interrupt, "", false, 0, ""},
		{"interrupt of the running job", with(domain.StatusRunning, nil), interrupt, "session-5/turn-3", false, 0, ""},
		{"interrupt of a job already replaced", with(domain.StatusRunning, nil), interrupt, "session-5/turn-2", false, domain.RefusedBusy, `not the interrupted "session-5/turn-2"`},
		{"idle to a session whose first turn has not started", unstarted("fix the build", nil), idle, "", false, domain.RefusedBusy, "first turn"},
		{"idle to a session that ran and sleeps", unstarted("fix the build", &now), idle, "", false, 0, ""},
		{"idle to a session created without a prompt", unstarted("", nil), idle, "", false, 0, ""},
	} {
		cmd := deliver(tt.mode)
		cmd.FromJobID, cmd.Automatic = tt.from, tt.automatic
		out, refused, err := domain.Deliver(tt.s, cmd, deliveryEnv())
		require.NoError(t, err, tt.name)
		if tt.want == 0 {
			require.Nil(t, refused, tt.name)
			require.Equal(t, "delivery/fresh", out.Session.Markers.RunningJobID, tt.name)
			continue
		}
		require.NotNil(t, refused, tt.name)
		require.Equal(t, tt.want, refused.Reason, tt.name)
		require.Contains(t, refused.Message, tt.words, tt.name)
		require.True(t, strings.HasPrefix(refused.Message, "session 5 "), tt.name)
		require.Empty(t, out.Timeline, "%s: a refusal changes nothing", tt.name)
	}
}

func TestDeliverCommandValidation(t *testing.T) {
	t.Parallel()
	fields := func(err error) []string {
		var verr *validation.Error
		require.ErrorAs(t, err, &verr)
		var out []string
		for _, v := range verr.Violations {
			out = append(out, v.Field)
		}
		return out
	}
	require.NoError(t, deliver(domain.DeliverToIdle).Validate())
	require.Equal(t, []string{"delivery_id", "prompt", "mode"}, fields(domain.DeliverCommand{Prompt: "  "}.Validate()))
	blank := deliver(domain.DeliverToIdle)
	blank.Prompt = "\n\r\t\u00a0"
	require.Equal(t, []string{"prompt"}, fields(blank.Validate()), "blank after trimming is no prompt")
	handover := deliver(domain.DeliverHandover)
	require.Equal(t, []string{"from_job_id"}, fields(handover.Validate()))

	long := deliver(domain.DeliverToIdle)
	long.Prompt = strings.Repeat("p", domain.MaxPromptChars+1)
	long.Goal = strings.Repeat("g", domain.MaxGoalChars+1)
	long.What = "a\x00"
	long.DeliveryID = strings.Repeat("d", domain.MaxDeliveryIDChars+1)
	require.Equal(t, []string{"delivery_id", "prompt", "goal", "what"}, fields(long.Validate()))
}

// TestRecordDrainAttemptCountsOnlyWhatAnAutomaticDeliveryCouldReach.
func TestRecordDrainAttemptCountsOnlyWhatAnAutomaticDeliveryCouldReach(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusNeedsInput)
	s.Markers.DrainAttempts = 2
	counted, refused := domain.RecordDrainAttempt(s, false)
	require.Nil(t, refused)
	require.Equal(t, 3, counted.Markers.DrainAttempts)

	for st, want := range map[domain.Status]domain.DeliveryRefusal{
		domain.StatusRunning: domain.RefusedBusy, domain.StatusArchived: domain.RefusedClosed, domain.StatusFailed: domain.RefusedClosed,
	} {
		s := session(st)
		got, refused := domain.RecordDrainAttempt(s, false)
		require.Equal(t, want, refused.Reason, st.String())
		require.Zero(t, got.Markers.DrainAttempts)
	}
	parked := session(domain.StatusWaiting)
	parked.Markers.AuthOutageReason = "login pool empty"
	_, refused = domain.RecordDrainAttempt(parked, false)
	require.Equal(t, domain.RefusedAuthOutage, refused.Reason, "the drain is automatic")

	// Issue 23 rule 7: a session asleep on a wake it armed is not woken by
	// its own queue — the wake's turn takes the message; awake (an overdue
	// wake is a stall, needs_input keeps its watchers) it is counted.
	_, refused = domain.RecordDrainAttempt(session(domain.StatusWaiting), true)
	require.Equal(t, domain.RefusedAsleep, refused.Reason)
	_, refused = domain.RecordDrainAttempt(session(domain.StatusWaiting), false)
	require.Nil(t, refused)
	_, refused = domain.RecordDrainAttempt(session(domain.StatusNeedsInput), true)
	require.Nil(t, refused)
}
