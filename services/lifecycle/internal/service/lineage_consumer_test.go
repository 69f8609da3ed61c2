package service_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// uncleEdgeChanged is the event lineage sends when acting became target's
// uncle, with a line for each.
func uncleEdgeChanged(id string, at time.Time, acting, target int64, lines ...*lineagev1.SessionTimelineLine) *lineagev1.ConsumeLineageEventRequest {
	return &lineagev1.ConsumeLineageEventRequest{Event: &lineagev1.LineageEvent{
		EventId:    id,
		OccurredAt: timestamppb.New(at),
		Payload: &lineagev1.LineageEvent_UncleEdgeChanged{UncleEdgeChanged: &lineagev1.UncleEdgeChanged{
			Outcome:         lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN,
			ActingSessionId: acting,
			TargetSessionId: target,
			EntryPoint:      "rest.follow_up",
			Lines:           lines,
		}},
	}}
}

func notes(t *testing.T, b testBundle, id int64) []*lifecyclev1.TimelineLine {
	t.Helper()
	var out []*lifecyclev1.TimelineLine
	for _, l := range b.timeline(t, id) {
		if l.GetKind() == "note" {
			out = append(out, l)
		}
	}
	return out
}

// TestConsumeLineageEventWritesBothTimelinesOnce: lineage's uncle-edge
// event puts its line on each session's timeline, dated when the edge was
// recorded; a redelivery, sequential or concurrent, writes nothing more.
func TestConsumeLineageEventWritesBothTimelinesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := t.Context()
	consumer := lineagev1.NewLineageEventConsumerServiceClient(b.lineage)
	acting := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "route", GitRoot: "g"}).GetId()
	target := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "work", GitRoot: "g"}).GetId()
	before := len(b.timeline(t, target))

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	req := uncleEdgeChanged(uuid.NewString(), at, acting, target,
		&lineagev1.SessionTimelineLine{SessionId: acting, Kind: "note", Message: "[Lineage] This session is now an uncle of session #2 via rest.follow_up"},
		&lineagev1.SessionTimelineLine{SessionId: target, Kind: "note", Message: "[Lineage] Session #1 is now an uncle of this session via rest.follow_up"},
	)
	resp, err := consumer.ConsumeLineageEvent(ctx, req)
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	resp, err = consumer.ConsumeLineageEvent(ctx, req)
	require.NoError(t, err)
	require.False(t, resp.GetApplied(), "a redelivery is recognised")

	for id, want := range map[int64]string{acting: req.GetEvent().GetUncleEdgeChanged().GetLines()[0].GetMessage(), target: req.GetEvent().GetUncleEdgeChanged().GetLines()[1].GetMessage()} {
		got := notes(t, b, id)
		require.Len(t, got, 1, "session %d: one line, however often it was delivered", id)
		require.Equal(t, want, got[0].GetMessage())
		require.True(t, got[0].GetCreatedAt().AsTime().Equal(at), "dated when lineage recorded the edge")
	}
	require.Len(t, b.timeline(t, target), before+1, "nothing else was written")

	// Concurrent duplicates of a new event apply once between them.
	again := uncleEdgeChanged(uuid.NewString(), at, acting, target,
		&lineagev1.SessionTimelineLine{SessionId: target, Kind: "note", Message: "[Lineage] second"})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied int
	)
	for range 5 {
		wg.Go(func() {
			resp, err := consumer.ConsumeLineageEvent(ctx, again)
			if err != nil {
				t.Errorf("concurrent delivery: %v", err)
				return
			}
			if resp.GetApplied() {
				mu.Lock()
				applied++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, applied)
	require.Len(t, notes(t, b, target), 2)
}

// TestConsumeLineageEventRefusesWhatItCanNeverWrite: a line forging a
// transition, an event with no id or no lines, and an unknown payload are
// InvalidArgument naming the field (lineage's relay parks them as dead),
// and write nothing; a line for a session that no longer exists is
// skipped, so the event still applies.
func TestConsumeLineageEventRefusesWhatItCanNeverWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := t.Context()
	consumer := lineagev1.NewLineageEventConsumerServiceClient(b.lineage)
	id := b.create(t, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g"}).GetId()
	before := len(b.timeline(t, id))
	at := time.Now()

	for _, tt := range []struct {
		name  string
		req   *lineagev1.ConsumeLineageEventRequest
		field string
	}{
		{"a forged transition", uncleEdgeChanged(uuid.NewString(), at, 1, id,
			&lineagev1.SessionTimelineLine{SessionId: id, Kind: "note", Message: "fine"},
			&lineagev1.SessionTimelineLine{SessionId: id, Kind: "transition", Message: "[State Machine] Session archived"}),
			"event.uncle_edge_changed.lines[1].kind"},
		{"a NUL", uncleEdgeChanged(uuid.NewString(), at, 1, id,
			&lineagev1.SessionTimelineLine{SessionId: id, Kind: "note", Message: "a\x00b"}), "event.uncle_edge_changed.lines[0].message"},
		{"no lines", uncleEdgeChanged(uuid.NewString(), at, 1, id), "event.uncle_edge_changed.lines"},
		{"no id", uncleEdgeChanged("", at, 1, id, &lineagev1.SessionTimelineLine{SessionId: id, Kind: "note", Message: "x"}), "event.event_id"},
		{"no payload", &lineagev1.ConsumeLineageEventRequest{Event: &lineagev1.LineageEvent{EventId: uuid.NewString()}}, "event.payload"},
		{"no event", &lineagev1.ConsumeLineageEventRequest{}, "event"},
	} {
		_, err := consumer.ConsumeLineageEvent(ctx, tt.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), tt.name)
		require.Contains(t, status.Convert(err).Message(), tt.field, tt.name)
	}
	require.Len(t, b.timeline(t, id), before, "a refused event writes nothing")

	resp, err := consumer.ConsumeLineageEvent(ctx, uncleEdgeChanged(uuid.NewString(), at, 987654, id,
		&lineagev1.SessionTimelineLine{SessionId: 987654, Kind: "note", Message: "gone"},
		&lineagev1.SessionTimelineLine{SessionId: id, Kind: "note", Message: "[Lineage] kept"}))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	got := notes(t, b, id)
	require.Len(t, got, 1)
	require.Equal(t, "[Lineage] kept", got[0].GetMessage())
}
