package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func badFields(t *testing.T, err error) []string {
	t.Helper()
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

// TestTriggerServiceOverGRPC walks TriggerService and RefreshSession as an
// operator and as the services: Pause Until halts a running turn first and
// the session is asleep when it returns; refusals name their fields; the
// internal AwaitingScheduledWake answers in one call.
func TestTriggerServiceOverGRPC(t *testing.T) {
	t.Parallel()
	runner, addr := startFakeRunner(t)
	b := setupWithRunner(t, addr)
	runner.lifecycle = func() lifecyclev1.LifecycleServiceClient { return b.client }
	ctx := t.Context()
	triggers := lifecyclev1.NewTriggerServiceClient(servicetest.DialOperator(t, b.svc.Addr()))

	id := b.running(t)
	ref := fmt.Sprint(id)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	// A gRPC caller of the RFC 3339 era still arms with the Timestamp.
	resp, err := triggers.PauseUntil(ctx, &lifecyclev1.PauseUntilRequest{SessionId: ref, WakeAt: timestamppb.New(at), Prompt: "go on"}) //nolint:staticcheck // the deprecated field is still read
	require.NoError(t, err)
	require.Equal(t, "waiting", resp.GetSession().GetStatus(), "asleep before the call returns")
	require.Equal(t, []interruptCall{{id, "pause_until", "running"}}, runner.recorded(), "the turn was halted first")
	require.Equal(t, at, resp.GetTrigger().GetFireAt().AsTime())
	require.Equal(t, fmt.Sprintf("session/%d/wake/%d", id, resp.GetTrigger().GetId()), resp.GetTrigger().GetWorkflowId())
	require.Equal(t, "pause_until", resp.GetTrigger().GetSource())

	_, err = triggers.PauseUntil(ctx, &lifecyclev1.PauseUntilRequest{SessionId: ref, WakeAtText: time.Now().UTC().Add(5 * time.Second).Format(time.RFC3339)})
	require.Equal(t, []string{"wake_at"}, badFields(t, err))
	require.Contains(t, status.Convert(err).Message(), "grace window")
	_, err = triggers.WakeMeUpLater(ctx, &lifecyclev1.WakeMeUpLaterRequest{SessionId: ref, WakeAtText: at.UTC().Format(time.RFC3339), Delay: "1h"})
	require.Equal(t, []string{"wake_at", "delay"}, badFields(t, err))
	_, err = triggers.WatchSession(ctx, &lifecyclev1.WatchSessionRequest{SessionId: ref, WatchedSessionId: id, States: []string{"running"}})
	require.Equal(t, []string{"watched_session_id", "states"}, badFields(t, err))

	later, err := triggers.WakeMeUpLater(ctx, &lifecyclev1.WakeMeUpLaterRequest{SessionId: ref, Delay: "2h"})
	require.NoError(t, err)
	require.Equal(t, "waiting", later.GetSession().GetStatus())
	other := b.needsInput(t)
	// other is needs_input already: watching it for that is refused
	// (issue 23 rule 5); for what it is not yet, the watcher arms.
	_, err = triggers.WatchSession(ctx, &lifecyclev1.WatchSessionRequest{SessionId: ref, WatchedSessionId: other, States: []string{"needs_input", "failed"}})
	require.Equal(t, []string{"states"}, badFields(t, err))
	watch, err := triggers.WatchSession(ctx, &lifecyclev1.WatchSessionRequest{SessionId: ref, WatchedSessionId: other, States: []string{"failed", "archived"}})
	require.NoError(t, err)
	require.Equal(t, []string{"failed", "archived"}, watch.GetTrigger().GetStates())
	require.Equal(t, fmt.Sprintf("Watcher #%d armed: session %d is asleep, and gets its next turn when session %d is next failed or archived.",
		watch.GetTrigger().GetId(), id, other), watch.GetMessage())

	list, err := triggers.ListTriggers(ctx, &lifecyclev1.ListTriggersRequest{SessionId: ref})
	require.NoError(t, err)
	require.Len(t, list.GetTriggers(), 3)
	require.Equal(t, resp.GetTrigger().GetId(), list.GetTriggers()[0].GetId(), "soonest first")
	require.Equal(t, watch.GetTrigger().GetId(), list.GetTriggers()[2].GetId(), "a watcher has no time: last")

	found, err := triggers.SearchTriggers(ctx, &lifecyclev1.SearchTriggersRequest{WatchedSessionId: other})
	require.NoError(t, err)
	require.Len(t, found.GetTriggers(), 1)
	_, err = triggers.SearchTriggers(ctx, &lifecyclev1.SearchTriggersRequest{Kind: "sometimes"})
	require.Equal(t, []string{"kind"}, badFields(t, err))

	_, err = triggers.CancelTrigger(ctx, &lifecyclev1.CancelTriggerRequest{SessionId: ref, TriggerId: later.GetTrigger().GetId()})
	require.NoError(t, err)
	_, err = triggers.CancelTrigger(ctx, &lifecyclev1.CancelTriggerRequest{SessionId: ref, TriggerId: later.GetTrigger().GetId()})
	require.Equal(t, codes.NotFound, status.Code(err), "a cancelled trigger cannot be cancelled again")
	_, err = triggers.CancelTrigger(ctx, &lifecyclev1.CancelTriggerRequest{SessionId: fmt.Sprint(other), TriggerId: watch.GetTrigger().GetId()})
	require.Equal(t, codes.NotFound, status.Code(err), "another session's trigger")

	internal := lifecyclev1.NewTriggerServiceClient(servicetest.DialAsService(t, b.svc.Addr(), "runner"))
	asleep, err := internal.AwaitingScheduledWake(ctx, &lifecyclev1.AwaitingScheduledWakeRequest{SessionIds: []int64{other, id}})
	require.NoError(t, err)
	require.Equal(t, []int64{id}, asleep.GetAsleepSessionIds())
	_, err = triggers.AwaitingScheduledWake(ctx, &lifecyclev1.AwaitingScheduledWakeRequest{SessionIds: []int64{id}})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal only")

	refreshed, err := b.operator.RefreshSession(ctx, &lifecyclev1.RefreshSessionRequest{SessionId: ref})
	require.NoError(t, err)
	require.False(t, refreshed.GetRefreshed())
	require.Contains(t, refreshed.GetMessage(), "asleep on purpose")
	// A needs_input session gets the plain re-read, no turn (issue 23
	// rule 6).
	refreshed, err = b.operator.RefreshSession(ctx, &lifecyclev1.RefreshSessionRequest{SessionId: fmt.Sprint(other)})
	require.NoError(t, err)
	require.False(t, refreshed.GetRefreshed(), refreshed.GetMessage())
	require.Equal(t, "needs_input", refreshed.GetSession().GetStatus())
}
