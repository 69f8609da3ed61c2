package service_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// The runner gives a session's recovery up once its budget is spent: the
// paused_by: recovery marker the sweeps select on is dropped, the reason is
// recorded and said on the timeline, once; a resume clears it. A client's
// key cannot do it.
func TestAbandonRecoveryDropsTheMarkerOnceAndResumeClearsTheReason(t *testing.T) {
	t.Parallel()
	addr := setup(t, "").svc.Addr()
	b := credBundle{operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, addr))}
	runner := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "runner"))
	ctx := context.Background()
	s := create(t, b.operator)
	id := fmt.Sprint(s.GetId())
	for _, req := range []*lifecyclev1.TransitionSessionRequest{
		{SessionId: id, Event: "start", RunningJobId: "session-1/turn-1"},
		{SessionId: id, Event: "pause", PausedBy: "recovery"},
	} {
		_, err := runner.TransitionSession(ctx, req)
		require.NoError(t, err)
	}

	_, err := b.operator.AbandonRecovery(ctx, &lifecyclev1.AbandonRecoveryRequest{SessionId: s.GetId(), Reason: "x"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal: never with a client's key (%v)", err)

	got, err := runner.AbandonRecovery(ctx, &lifecyclev1.AbandonRecoveryRequest{SessionId: s.GetId(), Reason: "12 recoveries in a row"})
	require.NoError(t, err)
	require.True(t, got.GetAbandoned())
	require.Equal(t, "needs_input", got.GetSession().GetStatus(), "it rests where it was")
	require.Empty(t, got.GetSession().GetPausedBy(), "no sweep selects it again")
	require.Equal(t, "12 recoveries in a row", got.GetSession().GetRecoveryContinueAbandoned())

	again, err := runner.AbandonRecovery(ctx, &lifecyclev1.AbandonRecoveryRequest{SessionId: s.GetId(), Reason: "12 recoveries in a row"})
	require.NoError(t, err)
	require.False(t, again.GetAbandoned(), "given up already: nothing more to do")
	var lines int
	for _, l := range timeline(t, b, s.GetId()) {
		if l.GetMessage() == "[Recovery] Zimmer stopped recovering this session automatically: 12 recoveries in a row (by the runner)" {
			lines++
		}
	}
	require.Equal(t, 1, lines, "said once on the timeline")

	_, err = runner.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: id, Event: "resume", RunningJobId: "session-1/turn-2"})
	require.NoError(t, err)
	read, err := b.operator.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: id})
	require.NoError(t, err)
	require.Empty(t, read.GetSession().GetRecoveryContinueAbandoned(), "a resume clears it")

	_, err = runner.AbandonRecovery(ctx, &lifecyclev1.AbandonRecoveryRequest{SessionId: 0})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// The runner says on the timeline what became of a clone: once per note id
// however often it is asked, as a note or a warning, attributed to it; a
// client's key cannot write one.
func TestRecordTimelineNoteWritesOncePerNoteID(t *testing.T) {
	t.Parallel()
	addr := setup(t, "").svc.Addr()
	b := credBundle{operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, addr))}
	runner := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, addr, "runner"))
	ctx := context.Background()
	s := create(t, b.operator)
	note := &lifecyclev1.RecordTimelineNoteRequest{SessionId: s.GetId(), NoteId: "0b7c7a32-6b4e-4d55-9a53-1f0e8f3c9a10",
		Message: "[Clone] kept whole: 64 tracked files deleted against HEAD", Warning: true}

	_, err := b.operator.RecordTimelineNote(ctx, note)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal: never with a client's key (%v)", err)
	for range 2 {
		_, err = runner.RecordTimelineNote(ctx, note)
		require.NoError(t, err)
	}
	var got []*lifecyclev1.TimelineLine
	for _, l := range timeline(t, b, s.GetId()) {
		if l.GetMessage() == note.GetMessage()+" (by the runner)" {
			got = append(got, l)
		}
	}
	require.Len(t, got, 1, "a retried note is written once")
	require.Equal(t, "warning", got[0].GetKind())

	for _, bad := range []*lifecyclev1.RecordTimelineNoteRequest{
		{SessionId: s.GetId(), NoteId: "0b7c7a32-6b4e-4d55-9a53-1f0e8f3c9a11"},
		{SessionId: s.GetId(), Message: "no id"},
	} {
		_, err = runner.RecordTimelineNote(ctx, bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v: %v", bad, err)
	}
}
