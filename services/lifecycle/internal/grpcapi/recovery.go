package grpcapi

import (
	"context"
	"time"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// AbandonRecovery implements lifecyclev1.LifecycleServiceServer: internal,
// the runner giving a session's recovery up when its budget is spent.
func (s *Server) AbandonRecovery(ctx context.Context, req *lifecyclev1.AbandonRecoveryRequest) (*lifecyclev1.AbandonRecoveryResponse, error) {
	got, abandoned, err := s.sessions.Abandon.Handle(ctx, req.GetSessionId(), req.GetReason(), auditBy(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, err := wire.Session(got)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.AbandonRecoveryResponse{Abandoned: abandoned, Session: sess}, nil
}

// ClearTrashExpiry implements lifecyclev1.LifecycleServiceServer:
// internal, the runner saying nothing of an archived session is retained
// any more.
func (s *Server) ClearTrashExpiry(ctx context.Context, req *lifecyclev1.ClearTrashExpiryRequest) (*lifecyclev1.ClearTrashExpiryResponse, error) {
	var archivedAt time.Time
	if ts := req.GetArchivedAt(); ts != nil && ts.IsValid() {
		archivedAt = ts.AsTime()
	}
	got, cleared, err := s.sessions.ClearTrash.Handle(ctx, req.GetSessionId(), archivedAt)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, err := wire.Session(got)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.ClearTrashExpiryResponse{Cleared: cleared, Session: sess}, nil
}

// WithExternalLines serves RecordTimelineNote with uc.
func (s *Server) WithExternalLines(uc app.AppendExternalTimelineLines) *Server {
	s.externalLines = uc
	return s
}

// RecordTimelineNote implements lifecyclev1.LifecycleServiceServer:
// internal, the runner saying on the timeline what became of a clone. The
// note id is the idempotency key, as an event id is for lineage's lines.
func (s *Server) RecordTimelineNote(ctx context.Context, req *lifecyclev1.RecordTimelineNoteRequest) (*lifecyclev1.RecordTimelineNoteResponse, error) {
	if validation.Blank(req.GetMessage()) {
		return nil, s.toStatus(ctx, validation.Invalid("message", "missing; a line says something"))
	}
	kind := domain.TimelineNote
	if req.GetWarning() {
		kind = domain.TimelineWarning
	}
	_, err := s.externalLines.Handle(ctx, app.ExternalTimelineEvent{
		ID: req.GetNoteId(), Topic: "runner.timeline_note", Payload: "note",
		Lines: []domain.ExternalTimelineLine{{SessionID: req.GetSessionId(),
			Entry: domain.TimelineEntry{Kind: kind, Message: domain.Attributed(req.GetMessage(), auditBy(ctx))}}},
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RecordTimelineNoteResponse{}, nil
}

// CreateStatusSummaryFork implements lifecyclev1.LifecycleServiceServer:
// internal, the runner forking a session to summarise it.
func (s *Server) CreateStatusSummaryFork(ctx context.Context, req *lifecyclev1.CreateStatusSummaryForkRequest) (*lifecyclev1.CreateStatusSummaryForkResponse, error) {
	fork, created, err := s.sessions.Fork.Handle(ctx, req.GetSourceSessionId(), req.GetPrompt(), req.GetTranscriptPosition())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(fork)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.CreateStatusSummaryForkResponse{Fork: msg, Created: created}, nil
}

// HarvestStatusSummaryFork implements lifecyclev1.LifecycleServiceServer:
// internal, the runner handing over what a fork's turn wrote.
func (s *Server) HarvestStatusSummaryFork(ctx context.Context, req *lifecyclev1.HarvestStatusSummaryForkRequest) (*lifecyclev1.HarvestStatusSummaryForkResponse, error) {
	h, err := s.sessions.Harvest.Handle(ctx, req.GetForkSessionId(), req.GetText(), req.GetFailureReason())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.HarvestStatusSummaryForkResponse{Harvested: h.Harvested}
	if resp.Fork, err = wire.Session(h.Fork); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if h.Source != nil {
		if resp.Source, err = wire.Session(*h.Source); err != nil {
			return nil, s.toStatus(ctx, err)
		}
	}
	return resp, nil
}
