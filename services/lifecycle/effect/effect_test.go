package effect_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
)

// TestEveryKindIsNamedAsTheSpecsCallback: each message of SessionEffect's
// kind carries its effect_name, and the names are the spec's callbacks,
// each once.
func TestEveryKindIsNamedAsTheSpecsCallback(t *testing.T) {
	t.Parallel()
	kinds := (&lifecyclev1.SessionEffect{}).ProtoReflect().Descriptor().Oneofs().ByName("kind").Fields()
	var names []string
	for i := range kinds.Len() {
		e := &lifecyclev1.SessionEffect{}
		fd := kinds.Get(i)
		e.ProtoReflect().Set(fd, e.ProtoReflect().NewField(fd))
		names = append(names, effect.Name(e))
	}
	require.ElementsMatch(t, []string{
		"fire_ao_event_triggers",
		"enqueue_debounced_needs_input_push_notification",
		"enqueue_session_inference_if_needed",
		"enqueue_status_summary_refresh",
		"drain_enqueued_messages_after_pause",
		"cancel_pending_one_time_wake_triggers",
		"mark_notifications_stale",
		"enqueue_failure_push_notification",
		"dismiss_notifications",
		"cleanup_watched_session_ao_event_triggers",
		"enqueue_deferred_cleanup",
		"harvest_status_summary_fork",
		"record_experimental_setting_flags",
		"retire_enqueued_messages",
		"reopen_enqueued_messages",
		"restore_clone",
	}, names)
	require.Empty(t, effect.Name(&lifecyclev1.SessionEffect{}), "no kind, no name")
	require.Empty(t, effect.Name(nil))
}

// TestUnhandledSaysWhichEffectAndWhy: the consumers' one way to answer an
// effect they do not carry out logs the effect, the session, the event and
// the reason, and answers applied false.
func TestUnhandledSaysWhichEffectAndWhy(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	ev := &lifecyclev1.SessionEvent{EventId: "ev-1", SessionId: 42, Payload: &lifecyclev1.SessionEvent_Effect{Effect: &lifecyclev1.SessionEffect{
		Kind: &lifecyclev1.SessionEffect_Drain{Drain: &lifecyclev1.DrainEffect{StatusAfter: "needs_input"}},
	}}}
	resp := effect.Unhandled(t.Context(), logger, ev, "not notification's")
	require.False(t, resp.GetApplied())
	for _, want := range []string{"not carried out: not notification's", "effect=drain_enqueued_messages_after_pause", "session_id=42", "event_id=ev-1"} {
		require.Contains(t, log.String(), want)
	}
}
