package grpcapi

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// topicUncleEdgeChanged is what the inbox records an UncleEdgeChanged as:
// lineage's own topic for it.
const topicUncleEdgeChanged = "lineage.uncle_edge_changed"

// LineageConsumer implements lineagev1.LineageEventConsumerServiceServer:
// lifecycle's side of lineage's delivery contract. Lineage decides what its
// events say about a session; lifecycle, which owns the timelines, writes
// it. A redelivery changes nothing (applied false), and an event lifecycle
// can never apply is InvalidArgument, which parks it as dead in lineage's
// outbox rather than retrying it.
type LineageConsumer struct {
	lineagev1.UnimplementedLineageEventConsumerServiceServer
	lines  app.AppendExternalTimelineLines
	errors *Server // its toStatus
}

var _ lineagev1.LineageEventConsumerServiceServer = (*LineageConsumer)(nil)

// NewLineageConsumer returns the consumer over lines; logger receives the
// errors reported to the producer only as "internal error".
func NewLineageConsumer(lines app.AppendExternalTimelineLines, logger *slog.Logger) *LineageConsumer {
	return &LineageConsumer{lines: lines, errors: &Server{logger: logger}}
}

// Register adds the service to g.
func (c *LineageConsumer) Register(g *grpc.Server) {
	lineagev1.RegisterLineageEventConsumerServiceServer(g, c)
}

// ConsumeLineageEvent implements lineagev1.LineageEventConsumerServiceServer.
func (c *LineageConsumer) ConsumeLineageEvent(ctx context.Context, req *lineagev1.ConsumeLineageEventRequest) (*lineagev1.ConsumeLineageEventResponse, error) {
	ev, err := lineageEventFromProto(req.GetEvent())
	if err != nil {
		return nil, c.errors.toStatus(ctx, err)
	}
	applied, err := c.lines.Handle(ctx, ev)
	if err != nil {
		return nil, c.errors.toStatus(ctx, err)
	}
	return &lineagev1.ConsumeLineageEventResponse{Applied: applied}, nil
}

// lineageEventFromProto translates the wire event. It refuses only what the
// wire shape makes unreadable; the use case validates the rest.
func lineageEventFromProto(e *lineagev1.LineageEvent) (app.ExternalTimelineEvent, error) {
	if e == nil {
		return app.ExternalTimelineEvent{}, validation.Invalid("event", "missing")
	}
	ev := app.ExternalTimelineEvent{ID: e.GetEventId()}
	if e.GetOccurredAt() != nil {
		ev.At = e.GetOccurredAt().AsTime()
	}
	switch p := e.GetPayload().(type) {
	case *lineagev1.LineageEvent_UncleEdgeChanged:
		ev.Topic, ev.Payload = topicUncleEdgeChanged, "uncle_edge_changed"
		for _, l := range p.UncleEdgeChanged.GetLines() {
			ev.Lines = append(ev.Lines, domain.ExternalTimelineLine{
				SessionID: l.GetSessionId(),
				Entry:     domain.TimelineEntry{Kind: domain.TimelineKind(l.GetKind()), Message: l.GetMessage()},
			})
		}
	default:
		return app.ExternalTimelineEvent{}, validation.Invalid("event.payload", "missing or unknown to lifecycle; want uncle_edge_changed")
	}
	return ev, nil
}
