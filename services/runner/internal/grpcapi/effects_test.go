package grpcapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lifecycleeffect "github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/infer"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

type started struct {
	opts client.StartWorkflowOptions
	name any
	args []any
}

type fakeWorkflows struct {
	started []started
	running map[string]bool
	err     error
}

func (f *fakeWorkflows) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, name any, args ...any) (client.WorkflowRun, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.running[o.ID] {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("running", "", "")
	}
	f.started = append(f.started, started{o, name, args})
	return nil, nil
}

func effectConsumer(w *fakeWorkflows, log *bytes.Buffer) *grpcapi.Consumer {
	logger := slog.New(slog.NewTextHandler(log, nil))
	return grpcapi.NewConsumer(&fakeStarter{}, workflow.Starter{Node: "n1"}, "demo", logger).
		WithEffects(grpcapi.NewEffects(w, 2*time.Minute, logger))
}

func effect(id int64, e *lifecyclev1.SessionEffect) *lifecyclev1.SessionEvent {
	e.Session = &lifecyclev1.Session{Id: id}
	return &lifecyclev1.SessionEvent{EventId: "ev-" + lifecycleeffect.Name(e), SessionId: id, Payload: &lifecyclev1.SessionEvent_Effect{Effect: e}}
}

// The effects lifecycle addresses to the runner, as its events carry them.
func deferredCleanup(trashAfter *timestamppb.Timestamp) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_DeferredCleanup{
		DeferredCleanup: &lifecyclev1.DeferredCleanupEffect{TrashAfter: trashAfter}}}
}

func restoreClone() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_RestoreClone{RestoreClone: &lifecyclev1.RestoreCloneEffect{}}}
}

func inference() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_Inference{Inference: &lifecyclev1.InferenceEffect{}}}
}

func statusSummaryRefresh() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_StatusSummaryRefresh{
		StatusSummaryRefresh: &lifecyclev1.StatusSummaryRefreshEffect{}}}
}

func harvestFork() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_HarvestFork{HarvestFork: &lifecyclev1.HarvestForkEffect{}}}
}

// dismissNotifications is notification's.
func dismissNotifications() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_DismissNotifications{
		DismissNotifications: &lifecyclev1.DismissNotificationsEffect{}}}
}

var archiveDeadline = timestamppb.New(time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC))

func TestDeferredCleanupStartsTheClonesCleanUp(t *testing.T) {
	t.Parallel()
	w := &fakeWorkflows{}
	c := effectConsumer(w, &bytes.Buffer{})
	resp, err := consume(t, c, effect(42, deferredCleanup(archiveDeadline)))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Len(t, w.started, 1)
	require.Equal(t, "session/42/clone-cleanup", w.started[0].opts.ID)
	require.Equal(t, "zimmer-runner", w.started[0].opts.TaskQueue)
	require.Equal(t, clone.CleanupWorkflowName, w.started[0].name)
	require.Equal(t, []any{clone.CleanupInput{
		SessionID: 42, TrashAfter: time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC), UndoWindow: 2 * time.Minute,
	}}, w.started[0].args)

	// Redelivered while that run waits out its window: it serves both.
	w.running = map[string]bool{"session/42/clone-cleanup": true}
	resp, err = consume(t, c, effect(42, deferredCleanup(archiveDeadline)))
	require.NoError(t, err)
	require.False(t, resp.GetApplied())
	require.Len(t, w.started, 1)
}

func TestDeferredCleanupReadsTheDeadlineOffTheSessionWhenThePayloadLacksIt(t *testing.T) {
	t.Parallel()
	w := &fakeWorkflows{}
	c := effectConsumer(w, &bytes.Buffer{})
	e := effect(42, deferredCleanup(nil))
	deadline := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	e.GetEffect().Session.TrashAfter = timestamppb.New(deadline)
	_, err := consume(t, c, e)
	require.NoError(t, err)
	require.Equal(t, deadline, w.started[0].args[0].(clone.CleanupInput).TrashAfter)

	_, err = consume(t, c, effect(42, deferredCleanup(&timestamppb.Timestamp{Nanos: -1})))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = consume(t, c, effect(42, deferredCleanup(nil)))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

func TestRestoreCloneStartsTheClonesRestore(t *testing.T) {
	t.Parallel()
	w := &fakeWorkflows{}
	c := effectConsumer(w, &bytes.Buffer{})
	resp, err := consume(t, c, effect(42, restoreClone()))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Equal(t, "session/42/clone-restore", w.started[0].opts.ID)
	require.Equal(t, []any{clone.RestoreInput{SessionID: 42}}, w.started[0].args)
}

func TestTemporalTroubleIsRetriedByTheRelay(t *testing.T) {
	t.Parallel()
	w := &fakeWorkflows{err: errors.New("connection refused")}
	_, err := consume(t, effectConsumer(w, &bytes.Buffer{}), effect(42, restoreClone()))
	require.Equal(t, codes.Unavailable, status.Code(err))
}

// A pause's inference starts session/<id>/infer; a second effect for the
// same session while that run is going starts nothing (two inferences of
// one session never run at once).
func TestInferenceStartsOneInferencePerSession(t *testing.T) {
	t.Parallel()
	w := &fakeWorkflows{}
	c := effectConsumer(w, &bytes.Buffer{})
	resp, err := consume(t, c, effect(42, inference()))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Len(t, w.started, 1)
	require.Equal(t, "session/42/infer", w.started[0].opts.ID)
	require.Equal(t, "zimmer-runner", w.started[0].opts.TaskQueue)
	require.Equal(t, infer.WorkflowName, w.started[0].name)
	require.Equal(t, []any{infer.Input{SessionID: 42}}, w.started[0].args)

	w.running = map[string]bool{"session/42/infer": true}
	resp, err = consume(t, c, effect(42, inference()))
	require.NoError(t, err)
	require.False(t, resp.GetApplied(), "the running inference serves it")
	require.Len(t, w.started, 1)
}

// TestEffectsNotBuiltAreAcknowledged: the other runner-owned effects are
// answered (so the relay stops retrying) and say so in the log; an effect
// the runner does not own is answered applied false, and the log names it
// (lifecycle/effect.Unhandled, the consumers' one way to say so).
func TestEffectsNotBuiltAreAcknowledged(t *testing.T) {
	t.Parallel()
	for _, e := range []*lifecyclev1.SessionEffect{statusSummaryRefresh(), harvestFork()} {
		name := lifecycleeffect.Name(e)
		var log bytes.Buffer
		w := &fakeWorkflows{}
		resp, err := consume(t, effectConsumer(w, &log), effect(42, e))
		require.NoError(t, err, name)
		require.False(t, resp.GetApplied())
		require.Empty(t, w.started)
		require.Contains(t, log.String(), "does not build it yet")
		require.Contains(t, log.String(), name)
	}
	var log bytes.Buffer
	resp, err := consume(t, effectConsumer(&fakeWorkflows{}, &log), effect(42, dismissNotifications()))
	require.NoError(t, err)
	require.False(t, resp.GetApplied())
	require.Contains(t, log.String(), "not the runner's")
	require.Contains(t, log.String(), "effect=dismiss_notifications")
}

// TestARunnerWithoutEffectsSaysSo: a runner that carries out no effects
// (no clones) answers one applied false and names it in the log.
func TestARunnerWithoutEffectsSaysSo(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	c := grpcapi.NewConsumer(&fakeStarter{}, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&log, nil)))
	resp, err := consume(t, c, effect(42, restoreClone()))
	require.NoError(t, err)
	require.False(t, resp.GetApplied())
	require.Contains(t, log.String(), "this runner carries out no effects")
	require.Contains(t, log.String(), "effect=restore_clone")
}
