package grpcapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func newServer(repo app.NodeRepository, logs *bytes.Buffer) *Server {
	return New(slog.New(slog.NewJSONHandler(logs, nil)), app.NewGetSessionNode(repo), app.GetHierarchy{}, app.RecordUncleEdge{}, app.RetractUncleEdge{})
}

func newConsumer(repo app.NodeRepository, logs *bytes.Buffer) *Consumer {
	return NewConsumer(slog.New(slog.NewJSONHandler(logs, nil)), app.NewApplySessionEvent(repo))
}

func createdEvent(id string, s *lifecyclev1.Session) *lifecyclev1.ConsumeSessionEventRequest {
	return &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: id, SessionId: s.GetId(),
		Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{Session: s}},
	}}
}

func TestApplyAndGetTranslateTheWire(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := apptest.NewNodes()
	srv, consumer := newServer(repo, &bytes.Buffer{}), newConsumer(repo, &bytes.Buffer{})

	meta, err := structpb.NewStruct(map[string]any{"router_session_id": "10"})
	require.NoError(t, err)
	child := &lifecyclev1.Session{
		Id: 11, Title: "worker", AgentRoot: "zimmer", Status: "running", Genesis: "web_ui",
		SchedulingClass: "spot", CustomMetadata: meta, UpdatedAt: timestamppb.New(time.Unix(100, 0)),
	}
	resp, err := consumer.ConsumeSessionEvent(ctx, createdEvent("00000000-0000-4000-8000-000000000011", child))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	parent := &lifecyclev1.Session{Id: 10, Title: "router", UpdatedAt: timestamppb.New(time.Unix(100, 0))}
	_, err = consumer.ConsumeSessionEvent(ctx, createdEvent("00000000-0000-4000-8000-000000000010", parent))
	require.NoError(t, err)

	got, err := srv.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 11})
	require.NoError(t, err)
	require.Equal(t, int64(10), got.GetNode().GetSpawnParentId(), "from the router_session_id metadata")
	require.Equal(t, "worker", got.GetNode().GetTitle())
	require.Equal(t, "zimmer", got.GetNode().GetAgentRoot())
	require.Equal(t, "running", got.GetNode().GetStatus())
	require.Equal(t, "web_ui", got.GetNode().GetGenesis())
	require.Equal(t, "spot", got.GetNode().GetSchedulingClass())

	got, err = srv.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 10})
	require.NoError(t, err)
	require.Nil(t, got.GetNode().SpawnParentId)
	require.Equal(t, []int64{11}, got.GetNode().GetSpawnChildIds())
}

func TestWireValidation(t *testing.T) {
	t.Parallel()

	valid := &lifecyclev1.Session{Id: 1, UpdatedAt: timestamppb.Now()}
	tests := []struct {
		name  string
		req   *lifecyclev1.ConsumeSessionEventRequest
		field string
	}{
		{"no event", &lifecyclev1.ConsumeSessionEventRequest{}, "event"},
		{"no event id", createdEvent("", valid), "event.event_id"},
		{"no payload", &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{EventId: "00000000-0000-4000-8000-000000000001"}}, "event.payload"},
		{"created without session", createdEvent("00000000-0000-4000-8000-000000000001", nil), "event.created.session"},
		{"an effect, which lineage does not own", &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
			EventId: "00000000-0000-4000-8000-000000000001",
			Payload: &lifecyclev1.SessionEvent_Effect{Effect: &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_FailurePush{
				FailurePush: &lifecyclev1.FailurePushEffect{FailureReason: "push"}}}},
		}}, "event.payload"},
		{"session without updated_at", createdEvent("00000000-0000-4000-8000-000000000001", &lifecyclev1.Session{Id: 1}), "event.created.session.updated_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newConsumer(apptest.NewNodes(), &bytes.Buffer{}).ConsumeSessionEvent(t.Context(), tt.req)
			require.Equal(t, codes.InvalidArgument, status.Code(err), err)
			require.Contains(t, status.Convert(err).Message(), tt.field)
			require.Equal(t, tt.field, badRequestField(t, err))
		})
	}
}

func badRequestField(t *testing.T, err error) string {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	t.Fatalf("no BadRequest detail in %v", err)
	return ""
}

func TestToStatus(t *testing.T) {
	t.Parallel()

	secret := errors.New("relation session_nodes does not exist")
	tests := []struct {
		name    string
		err     error
		code    codes.Code
		message string
		logged  bool
	}{
		{"not found keeps its message", domain.SessionNotKnown(4), codes.NotFound, "session 4 is not known to lineage yet", false},
		{"validation", fmt.Errorf("apply: %w", validation.Invalid("f", "r")), codes.InvalidArgument, "f: r", false},
		{"canceled", fmt.Errorf("query: %w", context.Canceled), codes.Canceled, "request canceled", false},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline exceeded", false},
		{"anything else is internal and logged", fmt.Errorf("get session node 4: %w", secret), codes.Internal, "internal error", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			err := newServer(apptest.NewNodes(), &logs).toStatus(t.Context(), tt.err)
			require.Equal(t, tt.code, status.Code(err))
			require.Equal(t, tt.message, status.Convert(err).Message())
			if tt.logged {
				require.Contains(t, logs.String(), secret.Error(), "the real error is logged")
			} else {
				require.Empty(t, logs.String())
			}
		})
	}
}

// TestUncleOutcomesRoundTrip: every outcome recording answers has its own
// wire value and comes back from it, so a retraction reads the outcome
// RecordUncleEdge sent; UNSPECIFIED and unknown values read as none.
func TestUncleOutcomesRoundTrip(t *testing.T) {
	t.Parallel()
	seen := map[lineagev1.UncleEdgeOutcome]bool{}
	for o := domain.UncleWritten; o <= domain.UncleRefusedBudgetExhausted; o++ {
		wire := outcomeToProto(o)
		require.NotEqual(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED, wire, "%s", o)
		require.False(t, seen[wire], "%s shares its wire value", o)
		seen[wire] = true
		require.Equal(t, o, outcomeFromProto(wire))
	}
	require.Len(t, seen, len(lineagev1.UncleEdgeOutcome_name)-1, "every wire outcome but UNSPECIFIED is one of the domain's")
	require.Zero(t, outcomeFromProto(lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED))
	require.Zero(t, outcomeFromProto(lineagev1.UncleEdgeOutcome(99)))
}
