// Package effect is what every context that consumes lifecycle's effects
// shares about them: the effect's name, read off its message's
// effect_name option in event.proto (the one place the spec's callback
// names are spelt), and the one way a consumer answers an effect it does
// not carry out.
package effect

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

var kindOneof = (&lifecyclev1.SessionEffect{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")

// Kind is the message of the effect e carries (nil when it carries none).
func Kind(e *lifecyclev1.SessionEffect) proto.Message {
	m := e.ProtoReflect()
	fd := m.WhichOneof(kindOneof)
	if fd == nil {
		return nil
	}
	return m.Get(fd).Message().Interface()
}

// Name is the spec's callback name of the effect e carries (its message's
// effect_name option); "" when it carries none.
func Name(e *lifecyclev1.SessionEffect) string {
	kind := Kind(e)
	if kind == nil {
		return ""
	}
	return nameOf(kind.ProtoReflect().Descriptor())
}

func nameOf(md protoreflect.MessageDescriptor) string {
	name, _ := proto.GetExtension(md.Options(), lifecyclev1.E_EffectName).(string)
	return name
}

// UnhandledMessage starts the log line of Unhandled: how a test tells an
// effect a consumer only acknowledged (effecttest.Handled).
const UnhandledMessage = "effect acknowledged, not carried out"

// Unhandled answers an effect the consumer received but does not carry
// out: one that is not its own (lifecycle addressed it to the wrong
// subscriber) or one it does not build yet. It says so in the log, naming
// the effect, the session, the event and why, and answers applied false
// so the relay stops retrying an effect no retry will carry out.
func Unhandled(ctx context.Context, logger *slog.Logger, ev *lifecyclev1.SessionEvent, why string) *lifecyclev1.ConsumeSessionEventResponse {
	logger.InfoContext(ctx, UnhandledMessage+": "+why,
		"effect", Name(ev.GetEffect()), "session_id", ev.GetSessionId(), "event_id", ev.GetEventId())
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}
}
