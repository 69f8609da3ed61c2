package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

func (b testBundle) create(t *testing.T, req *lifecyclev1.CreateSessionRequest) *lifecyclev1.Session {
	t.Helper()
	if req.Prompt == "" {
		req.Prompt, req.GitRoot = "p", "g"
	}
	resp, err := b.client.CreateSession(context.Background(), req)
	require.NoError(t, err)
	return resp.GetSession()
}

func (b testBundle) fire(t *testing.T, id int64, event string, opts ...func(*lifecyclev1.TransitionSessionRequest)) (*lifecyclev1.Session, error) {
	t.Helper()
	req := &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: event}
	for _, o := range opts {
		o(req)
	}
	resp, err := b.client.TransitionSession(context.Background(), req)
	return resp.GetSession(), err
}

func (b testBundle) timeline(t *testing.T, id int64) []*lifecyclev1.TimelineLine {
	t.Helper()
	resp, err := b.client.GetSessionTimeline(context.Background(), &lifecyclev1.GetSessionTimelineRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	return resp.GetTimeline()
}

func (b testBundle) events(t *testing.T, id int64) []*lifecyclev1.StreamEvent {
	t.Helper()
	resp, err := b.client.ListSessionEvents(context.Background(), &lifecyclev1.ListSessionEventsRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	return resp.GetEvents()
}

func TestTransitionsOverGRPC(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g", Goal: "open a PR", Slug: "work"})

	got, err := b.fire(t, s.GetId(), "start", func(r *lifecyclev1.TransitionSessionRequest) { r.RunningJobId = "job-1" })
	require.NoError(t, err)
	require.Equal(t, "running", got.GetStatus())
	require.EqualValues(t, 2, got.GetVersion())

	paused, err := b.client.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: "work"})
	require.NoError(t, err)
	require.Equal(t, "needs_input", paused.GetSession().GetStatus())
	require.Equal(t, "user", paused.GetSession().GetPausedBy())
	require.EqualValues(t, 1, paused.GetSession().GetNeedsInputCount())
	require.Contains(t, paused.GetMessage(), "running → needs_input")

	// A refusal: the right code, the event and the state named, nothing
	// changed but a timeline line.
	_, err = b.client.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: "work"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "cannot pause session 1: it is needs_input, and pause is only possible from running")
	again, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: "work"})
	require.NoError(t, err)
	require.Equal(t, paused.GetSession().GetVersion(), again.GetSession().GetVersion())

	_, err = b.fire(t, s.GetId(), "explode")
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	// The archive line names the surface the gateway declared.
	restCtx := surface.Outgoing(ctx, surface.MCP)
	acting := int64(5225)
	archived, err := b.client.ArchiveSession(restCtx, &lifecyclev1.ArchiveSessionRequest{SessionId: "work", ActingSessionId: &acting, Force: true})
	require.NoError(t, err)
	require.Equal(t, "archived", archived.GetSession().GetStatus())
	require.NotNil(t, archived.GetTrashAfter())

	un, err := b.client.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: "work"})
	require.NoError(t, err)
	require.Equal(t, "needs_input", un.GetSession().GetStatus(), "back to where it was archived from")
	require.Nil(t, un.GetSession().GetTrashAfter())

	var lines []string
	for _, l := range b.timeline(t, s.GetId()) {
		lines = append(lines, l.GetKind()+": "+l.GetMessage())
	}
	require.Equal(t, byAdmin(
		"transition: [State Machine] waiting → running (start)",
		"transition: [State Machine] running → needs_input (pause)",
		"warning: [State Machine] goal mentions a pull request but no PR URL was recorded for this session yet",
		"refusal: [State Machine] refused: cannot pause session 1: it is needs_input, and pause is only possible from running",
		"transition: [State Machine] Session moved to trash by session #5225 via the MCP API",
		"transition: [State Machine] Session unarchived with full state restoration by an unrecorded caller: archived → needs_input (unarchive_to_needs_input)",
	), lines)

	var names []string
	for _, e := range b.events(t, s.GetId()) {
		names = append(names, e.GetName())
	}
	require.Equal(t, []string{
		"transition", "record_experimental_setting_flags",
		"transition", "fire_ao_event_triggers", "enqueue_debounced_needs_input_push_notification",
		"enqueue_session_inference_if_needed", // the title is still pending
		"enqueue_status_summary_refresh", "drain_enqueued_messages_after_pause",
		"transition", "dismiss_notifications", "fire_ao_event_triggers", "cleanup_watched_session_ao_event_triggers", "enqueue_deferred_cleanup",
		"retire_enqueued_messages", // the queue's messages are retired by every archive
		"transition", "reopen_enqueued_messages", "restore_clone",
	}, names)
}

// A restart names no job: lifecycle draws one, shows it as the session's
// running_job_id and asks the runner's turns for the turn, which runs under
// it. A resume naming its job (the runner's recovery) asks for none.
func TestRestartOwnsAFreshJobAndAsksTheRunnerForItsTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err := b.fire(t, s.GetId(), "fail", func(r *lifecyclev1.TransitionSessionRequest) { r.FailureReason = "crashed" })
	require.NoError(t, err)

	restarted, err := b.client.RestartSession(ctx, &lifecyclev1.RestartSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	job := restarted.GetSession().GetRunningJobId()
	require.Regexp(t, `^resume/[0-9a-f-]{36}$`, job)
	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	require.Equal(t, job, got.GetSession().GetRunningJobId())

	asked := func() int {
		var n int
		require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages
			WHERE subscriber = 'runner_turns' AND topic = 'lifecycle.session_updated' AND aggregate_key = $1`,
			fmt.Sprint(s.GetId())).Scan(&n))
		return n
	}
	require.Equal(t, 1, asked(), "the restart asks the runner for its turn")

	paused, err := b.fire(t, s.GetId(), "pause")
	require.NoError(t, err)
	require.Empty(t, paused.GetRunningJobId(), "no job owns a paused session")
	require.Equal(t, 2, asked(), "leaving running may stop a turn")
	recovered, err := b.fire(t, s.GetId(), "resume", func(r *lifecyclev1.TransitionSessionRequest) {
		r.SystemRecovery, r.RunningJobId = true, "session-1/turn-2"
	})
	require.NoError(t, err)
	require.Equal(t, "session-1/turn-2", recovered.GetRunningJobId())
	require.Equal(t, 2, asked(), "the runner's own recovery resume asks for no turn")
}

// TestTransitionSessionFiresTheRawEvent: the public low-level driver applies
// exactly the machine's event — no verb semantics — names the acting session
// on the archive line like the named verbs, and says what it refused.
func TestTransitionSessionFiresTheRawEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{Slug: "raw"})
	id := s.GetId()
	acting := int64(77)
	transition := func(ctx context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
		req.SessionId = "raw"
		return b.client.TransitionSession(ctx, req)
	}

	resp, err := transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: "start", RunningJobId: "job-1"})
	require.NoError(t, err)
	require.Equal(t, "running", resp.GetSession().GetStatus())
	require.Equal(t, fmt.Sprintf("Session %d: waiting → running.", id), resp.GetMessage())

	// sleep is the machine's event: only from needs_input. The sleep verb
	// would have deferred it instead.
	_, err = transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: "sleep"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Equal(t, fmt.Sprintf("cannot sleep session %d: it is running, and sleep is only possible from needs_input", id), status.Convert(err).Message())
	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: "raw"})
	require.NoError(t, err)
	require.False(t, got.GetSession().GetPendingSleep(), "nothing deferred")

	resp, err = transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: "pause", PausedBy: "harness"})
	require.NoError(t, err)
	require.Equal(t, "harness", resp.GetSession().GetPausedBy())
	resp, err = transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: "sleep"})
	require.NoError(t, err)
	require.Equal(t, "waiting", resp.GetSession().GetStatus())

	// The archive line names the surface and the acting session.
	resp, err = transition(surface.Outgoing(ctx, surface.REST), &lifecyclev1.TransitionSessionRequest{Event: "archive", ActingSessionId: &acting})
	require.NoError(t, err)
	require.Equal(t, "archived", resp.GetSession().GetStatus())
	// unarchive names its target: back to failed although it was archived
	// from waiting.
	resp, err = transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: "unarchive_to_failed"})
	require.NoError(t, err)
	require.Equal(t, "failed", resp.GetSession().GetStatus())
	_, err = transition(surface.Outgoing(ctx, surface.MCPSelf), &lifecyclev1.TransitionSessionRequest{Event: "archive", ActingSessionId: &id})
	require.NoError(t, err)

	// Unknown events, the verbs among them, are the caller's error and name
	// every event; nothing is written.
	for _, ev := range []string{"explode", "restart", "unarchive", ""} {
		_, err = transition(ctx, &lifecyclev1.TransitionSessionRequest{Event: ev})
		st := status.Convert(err)
		require.Equal(t, codes.InvalidArgument, st.Code(), ev)
		require.Contains(t, st.Message(), "event: ", ev)
		require.Contains(t, st.Message(), "start, pause, resume, sleep, block_on_elicitation, unblock_from_elicitation, fail, archive, "+
			"unarchive_to_waiting, unarchive_to_failed, unarchive_to_needs_input", ev)
	}

	var lines []string
	for _, l := range b.timeline(t, id) {
		lines = append(lines, l.GetKind()+": "+l.GetMessage())
	}
	require.Equal(t, byAdmin(
		"transition: [State Machine] waiting → running (start)",
		fmt.Sprintf("refusal: [State Machine] refused: cannot sleep session %d: it is running, and sleep is only possible from needs_input", id),
		"transition: [State Machine] running → needs_input (pause)",
		"transition: [State Machine] needs_input → waiting (sleep)",
		"transition: [State Machine] Session moved to trash by session #77 via the REST API",
		"transition: [State Machine] archived → failed (unarchive_to_failed)",
		fmt.Sprintf("transition: [State Machine] Session moved to trash by session #%d via the self-session MCP server", id),
	), lines)
}

func TestSleepDefersOnARunningSession(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err := b.fire(t, s.GetId(), "start")
	require.NoError(t, err)

	resp, err := b.client.SleepSession(ctx, &lifecyclev1.SleepSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	require.Equal(t, "running", resp.GetSession().GetStatus())
	require.True(t, resp.GetSession().GetPendingSleep())

	paused, err := b.fire(t, s.GetId(), "pause")
	require.NoError(t, err)
	require.Equal(t, "waiting", paused.GetStatus(), "the deferred sleep fires at the end of the turn")
	require.False(t, paused.GetPendingSleep())
}

func TestSystemRecoveryResumeReadsArmedWakes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err := b.svc.Pool.Exec(context.Background(),
		`INSERT INTO wake_triggers (session_id, kind, fire_at) VALUES ($1, 'one_time', now() + interval '1 hour')`, s.GetId())
	require.NoError(t, err)

	got, err := b.fire(t, s.GetId(), "resume", func(r *lifecyclev1.TransitionSessionRequest) { r.SystemRecovery = true })
	require.NoError(t, err)
	require.True(t, got.GetPendingSleep(), "a wall-clock wake is armed: sleep again after the recovery turn")
	got, err = b.fire(t, s.GetId(), "pause")
	require.NoError(t, err)
	require.Equal(t, "waiting", got.GetStatus())
}

// TestConcurrentConflictingTransitions fires 50 random transitions at one
// session at once. Transitions of one session serialize, so it ends in a
// valid state, every applied transition left exactly one timeline line, and
// the stream and the timeline agree.
func TestConcurrentConflictingTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	other := b.create(t, &lifecyclev1.CreateSessionRequest{})
	// The raw "sleep" is refused on a running session (only the sleep verb
	// defers), so it never commits anything without a transition.
	events := []string{"start", "pause", "resume", "sleep", "fail", "archive", "unarchive_to_waiting", "unarchive_to_needs_input", "block_on_elicitation", "unblock_from_elicitation"}

	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		succeeded  int
		unexpected []error
	)
	for i := range 50 {
		wg.Go(func() {
			ev := events[rand.IntN(len(events))]
			_, err := b.client.TransitionSession(context.Background(), &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(s.GetId()), Event: ev})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				succeeded++
			case status.Code(err) != codes.FailedPrecondition:
				unexpected = append(unexpected, fmt.Errorf("event %s (call %d): %w", ev, i, err))
			}
		})
	}
	// A session never blocks another: the other one moves meanwhile.
	_, err := b.fire(t, other.GetId(), "start")
	require.NoError(t, err)
	wg.Wait()
	require.Empty(t, unexpected, "only refusals may fail")

	final, err := b.client.GetSession(context.Background(), &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(s.GetId())})
	require.NoError(t, err)
	require.Contains(t, []string{"waiting", "running", "needs_input", "failed", "archived"}, final.GetSession().GetStatus())
	require.EqualValues(t, 1+succeeded, final.GetSession().GetVersion(), "one committed change per success")

	var applied, transitionLines, streamTransitions int
	for _, l := range b.timeline(t, s.GetId()) {
		if l.GetKind() == "transition" {
			transitionLines++
		}
	}
	for _, e := range b.events(t, s.GetId()) {
		if e.GetName() == "transition" {
			streamTransitions++
			applied += len(e.GetPayload().GetFields()["events"].GetListValue().GetValues())
		}
	}
	require.Equal(t, succeeded, streamTransitions)
	require.Equal(t, applied, transitionLines, "exactly one timeline line per applied transition")
}

var _ grpc.ClientConnInterface = (*grpc.ClientConn)(nil)

// TestARetriedTransitionIsAnsweredAlreadyApplied: over gRPC, a
// TransitionSession repeated with its idempotency_key (the runner's retried
// activity) is answered already_applied with the session as it stands; the
// same key on another event is refused, and another key is decided afresh.
func TestARetriedTransitionIsAnsweredAlreadyApplied(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	start := &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(s.GetId()), Event: "start", RunningJobId: "job-1",
		IdempotencyKey: "session-1/run-a/turn-1/1-start"}

	first, err := b.client.TransitionSession(ctx, start)
	require.NoError(t, err)
	require.False(t, first.GetAlreadyApplied())
	again, err := b.client.TransitionSession(ctx, start)
	require.NoError(t, err, "a retry is answered, not refused")
	require.True(t, again.GetAlreadyApplied())
	require.Equal(t, "running", again.GetSession().GetStatus())
	require.Equal(t, first.GetSession().GetVersion(), again.GetSession().GetVersion(), "nothing changed")
	require.Contains(t, again.GetMessage(), "already applied")

	_, err = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(s.GetId()), Event: "pause",
		IdempotencyKey: start.GetIdempotencyKey()})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "a key names one transition")
	_, err = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(s.GetId()), Event: "start",
		RunningJobId: "job-2", IdempotencyKey: "session-1/run-a/turn-2/2-start"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "another start is refused as before")
}

// TestARestartRepeatedWithItsKeyRestartsOnce: RestartSession with an
// idempotency_key (the console's form, a REST client that lost the answer)
// resumes once; the same request again, even after the turn it asked for
// ended, is answered already_applied and asks for no second turn.
func TestARestartRepeatedWithItsKeyRestartsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	s := b.create(t, &lifecyclev1.CreateSessionRequest{})
	id := fmt.Sprint(s.GetId())
	for _, event := range []string{"start", "pause"} {
		_, err := b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: event})
		require.NoError(t, err, event)
	}
	restart := &lifecyclev1.RestartSessionRequest{SessionId: id, IdempotencyKey: "console-form-abc"}

	first, err := b.client.RestartSession(ctx, restart)
	require.NoError(t, err)
	require.False(t, first.GetAlreadyApplied())
	require.Equal(t, "running", first.GetSession().GetStatus())
	// The turn it asked for ends: the session is idle again, so a restart
	// without the key would resume it a second time.
	_, err = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "pause"})
	require.NoError(t, err)

	again, err := b.client.RestartSession(ctx, restart)
	require.NoError(t, err, "a repeat is answered, not refused")
	require.True(t, again.GetAlreadyApplied())
	require.Equal(t, "needs_input", again.GetSession().GetStatus(), "not restarted twice")
	require.Contains(t, again.GetMessage(), "already applied")

	_, err = b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "archive", IdempotencyKey: restart.GetIdempotencyKey()})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "a key names one transition")

	fresh, err := b.client.RestartSession(ctx, &lifecyclev1.RestartSessionRequest{SessionId: id, IdempotencyKey: "console-form-def"})
	require.NoError(t, err)
	require.False(t, fresh.GetAlreadyApplied(), "another key restarts")
	require.Equal(t, "running", fresh.GetSession().GetStatus())
}
