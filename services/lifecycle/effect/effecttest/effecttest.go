// Package effecttest asks a consumer of lifecycle's effects which of them it
// carries out, so each consumer's test can list them and fail on an effect
// it only acknowledges (issue 28: a delivered effect that does nothing is a
// stub).
package effecttest

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
)

// Kinds is one effect of every kind SessionEffect has, each its message
// at its zero value, for session 42.
func Kinds() []*lifecyclev1.SessionEffect {
	fields := (&lifecyclev1.SessionEffect{}).ProtoReflect().Descriptor().Oneofs().ByName("kind").Fields()
	out := make([]*lifecyclev1.SessionEffect, 0, fields.Len())
	for i := range fields.Len() {
		e := &lifecyclev1.SessionEffect{Session: &lifecyclev1.Session{Id: 42, Status: "needs_input"}}
		fd := fields.Get(i)
		e.ProtoReflect().Set(fd, e.ProtoReflect().NewField(fd))
		out = append(out, e)
	}
	return out
}

// Consume hands a consumer, built with logger, one event.
type Consume func(ctx context.Context, logger *slog.Logger, ev *lifecyclev1.SessionEvent)

// Handled offers consume one event of every effect kind (Kinds) and returns
// the names of those it did not answer through effect.Unhandled, which
// says so in the log of the logger consume is given. A consumer built
// without working dependencies may fail, or panic, past its switch on the
// kind: that still counts as carrying the effect out, because the question
// is only which effects it tries to carry out and which it merely
// acknowledges.
func Handled(t testing.TB, consume Consume) []string {
	t.Helper()
	var handled []string
	for _, e := range Kinds() {
		name := effect.Name(e)
		h := &unhandledSpy{}
		ev := &lifecyclev1.SessionEvent{EventId: uuid.NewString(), SessionId: 42, OccurredAt: timestamppb.Now(),
			Payload: &lifecyclev1.SessionEvent_Effect{Effect: e}}
		func() {
			defer func() { _ = recover() }() // past the switch: see above
			consume(t.Context(), slog.New(h), ev)
		}()
		if !h.seen.Load() {
			handled = append(handled, name)
		}
	}
	return handled
}

// unhandledSpy is a slog handler that notices effect.Unhandled's line.
type unhandledSpy struct{ seen atomic.Bool }

func (h *unhandledSpy) Enabled(context.Context, slog.Level) bool { return true }

func (h *unhandledSpy) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, effect.UnhandledMessage) {
		h.seen.Store(true)
	}
	return nil
}

func (h *unhandledSpy) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *unhandledSpy) WithGroup(string) slog.Handler      { return h }
