package events

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// Effect is e as the wire's SessionEffect, its kind set (the caller sets
// alerting and the session): the one mapping of the domain's effects to
// the contract's messages.
func Effect(e domain.Effect) (*lifecyclev1.SessionEffect, error) {
	var msg lifecyclev1.SessionEffect
	switch e := e.(type) {
	case domain.FireTriggers:
		msg.Kind = &lifecyclev1.SessionEffect_FireTriggers{FireTriggers: &lifecyclev1.FireTriggersEffect{Trigger: e.Trigger}}
	case domain.NeedsInputPush:
		msg.Kind = &lifecyclev1.SessionEffect_NeedsInputPush{NeedsInputPush: &lifecyclev1.NeedsInputPushEffect{NeedsInputCount: e.NeedsInputCount}}
	case domain.Inference:
		msg.Kind = &lifecyclev1.SessionEffect_Inference{Inference: &lifecyclev1.InferenceEffect{}}
	case domain.StatusSummaryRefresh:
		msg.Kind = &lifecyclev1.SessionEffect_StatusSummaryRefresh{StatusSummaryRefresh: &lifecyclev1.StatusSummaryRefreshEffect{}}
	case domain.Drain:
		msg.Kind = &lifecyclev1.SessionEffect_Drain{Drain: &lifecyclev1.DrainEffect{StatusAfter: e.StatusAfter.String()}}
	case domain.CancelWakes:
		msg.Kind = &lifecyclev1.SessionEffect_CancelWakes{CancelWakes: &lifecyclev1.CancelWakesEffect{Preserve: e.Preserve}}
	case domain.MarkNotificationsStale:
		msg.Kind = &lifecyclev1.SessionEffect_MarkNotificationsStale{MarkNotificationsStale: &lifecyclev1.MarkNotificationsStaleEffect{}}
	case domain.FailurePush:
		msg.Kind = &lifecyclev1.SessionEffect_FailurePush{FailurePush: &lifecyclev1.FailurePushEffect{FailureReason: e.FailureReason}}
	case domain.DismissNotifications:
		msg.Kind = &lifecyclev1.SessionEffect_DismissNotifications{DismissNotifications: &lifecyclev1.DismissNotificationsEffect{}}
	case domain.CleanupWatchers:
		msg.Kind = &lifecyclev1.SessionEffect_CleanupWatchers{CleanupWatchers: &lifecyclev1.CleanupWatchersEffect{}}
	case domain.DeferredCleanup:
		msg.Kind = &lifecyclev1.SessionEffect_DeferredCleanup{DeferredCleanup: &lifecyclev1.DeferredCleanupEffect{TrashAfter: stamp(e.TrashAfter)}}
	case domain.HarvestFork:
		h := &lifecyclev1.HarvestForkEffect{}
		if e.Failed {
			h.FailureReason = proto.String(e.FailureReason)
		}
		msg.Kind = &lifecyclev1.SessionEffect_HarvestFork{HarvestFork: h}
	case domain.RecordFlags:
		msg.Kind = &lifecyclev1.SessionEffect_RecordFlags{RecordFlags: &lifecyclev1.RecordFlagsEffect{}}
	case domain.RetireMessages:
		msg.Kind = &lifecyclev1.SessionEffect_RetireMessages{RetireMessages: &lifecyclev1.RetireMessagesEffect{Forced: e.Forced, ArchivedAt: ordering(e.ArchivedAt), AttemptId: e.AttemptID}}
	case domain.ReopenMessages:
		msg.Kind = &lifecyclev1.SessionEffect_ReopenMessages{ReopenMessages: &lifecyclev1.ReopenMessagesEffect{UnarchivedAt: ordering(e.UnarchivedAt)}}
	case domain.RestoreClone:
		msg.Kind = &lifecyclev1.SessionEffect_RestoreClone{RestoreClone: &lifecyclev1.RestoreCloneEffect{}}
	default:
		return nil, fmt.Errorf("no wire message for effect %T", e)
	}
	return &msg, nil
}

// stamp is an effect's time on the wire: whole seconds, as the spec's
// payloads have always spelt them (RFC 3339 without a fraction), so a
// consumer acts on the time the event stream shows.
func stamp(t time.Time) *timestamppb.Timestamp {
	return timestamppb.New(t.UTC().Truncate(time.Second))
}

// ordering is the time of an archive or an unarchive on the wire: not
// whole seconds but Postgres's precision (microseconds), because the queue
// orders the two by it — a retirement whose archive an unarchive undid
// retires nothing (queue QU-12). In whole seconds an unarchive and the
// next archive within the same second (Trash, Undo, Trash) were the same
// instant, and that archive's retirement was taken for undone: nothing
// retired, its seal left behind. The event stream still shows whole
// seconds (streamValue).
func ordering(t time.Time) *timestamppb.Timestamp {
	return timestamppb.New(t.UTC().Truncate(time.Microsecond))
}

// streamPayload is an effect's entry in the session's event stream (what
// operators read from ListSessionEvents): its message's fields by their
// proto names, times in RFC 3339. As in JSON, a field without presence is
// always shown and one with presence only when set.
func streamPayload(kind proto.Message) map[string]any {
	out := map[string]any{}
	if kind == nil {
		return out
	}
	m := kind.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.HasPresence() && !m.Has(fd) {
			continue
		}
		out[string(fd.Name())] = streamValue(fd, m.Get(fd))
	}
	return out
}

func streamValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		if ts, ok := v.Message().Interface().(*timestamppb.Timestamp); ok {
			return ts.AsTime().UTC().Format(time.RFC3339)
		}
		return streamPayload(v.Message().Interface())
	default:
		return v.Interface() // bool, string, int64: JSON's own
	}
}
