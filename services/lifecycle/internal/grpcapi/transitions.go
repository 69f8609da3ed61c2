package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// actor is who made the call: the surface the gateway declared, the
// acting session the caller declared, and the principal the call
// authenticated as, which every timeline line it writes names.
func actor(ctx context.Context, acting *int64) domain.Actor {
	a := domain.Actor{By: auditBy(ctx)}
	if acting != nil {
		a.SessionID = *acting
	}
	switch surface.Incoming(ctx) {
	case surface.REST:
		a.Kind = domain.ActorREST
	case surface.MCP:
		a.Kind = domain.ActorMCP
	case surface.MCPSelf:
		a.Kind = domain.ActorSelfSessionMCP
	case surface.WebUI:
		a.Kind = domain.ActorWebUI
	}
	return a
}

// auditBy is the call's effective principal as an audit line names it
// (principal.Describe: "operator key …abcd", "session #12's credential",
// "the runner"), never a secret; empty when the call carries none.
func auditBy(ctx context.Context) string {
	if p, ok := principal.FromContext(ctx); ok {
		return p.Describe()
	}
	return ""
}

// transition applies verb and renders the resulting session.
func (s *Server) transition(ctx context.Context, ref string, verb app.Verb, cmd domain.Command) (*lifecyclev1.Session, string, domain.Outcome, error) {
	out, err := s.sessions.Transition.Handle(ctx, ref, verb, cmd)
	if err != nil {
		return nil, "", out, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(out.Session)
	if err != nil {
		return nil, "", out, s.toStatus(ctx, err)
	}
	return msg, describe(out), out, nil
}

func describe(out domain.Outcome) string {
	if out.AlreadyApplied {
		return fmt.Sprintf("Session %d: already applied (from %s); it is %s now.", out.Session.ID, out.From, out.Session.Status)
	}
	if len(out.Applied) == 0 && out.Session.Markers.PendingSleep {
		return fmt.Sprintf("Session %d is running; it will go to waiting when its turn ends.", out.Session.ID)
	}
	return fmt.Sprintf("Session %d: %s → %s.", out.Session.ID, out.From, out.Session.Status)
}

// PauseSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseSession(ctx context.Context, req *lifecyclev1.PauseSessionRequest) (*lifecyclev1.PauseSessionResponse, error) {
	sess, msg, _, err := s.transition(ctx, req.GetSessionId(), app.Verb(domain.EventPause),
		domain.Command{Actor: actor(ctx, req.ActingSessionId), PausedBy: "user"})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.PauseSessionResponse{Session: sess, Message: msg}, nil
}

// SleepSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SleepSession(ctx context.Context, req *lifecyclev1.SleepSessionRequest) (*lifecyclev1.SleepSessionResponse, error) {
	sess, msg, _, err := s.transition(ctx, req.GetSessionId(), app.VerbSleep, domain.Command{Actor: actor(ctx, req.ActingSessionId)})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.SleepSessionResponse{Session: sess, Message: msg}, nil
}

// ArchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ArchiveSession(ctx context.Context, req *lifecyclev1.ArchiveSessionRequest) (*lifecyclev1.ArchiveSessionResponse, error) {
	ref, err := s.ownRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	acting, err := actingSession(ctx, req.ActingSessionId)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, _, out, err := s.transition(ctx, ref, app.Verb(domain.EventArchive), domain.Command{Actor: actor(ctx, acting), Force: req.GetForce()})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.ArchiveSessionResponse{
		Session:    sess,
		Message:    fmt.Sprintf("Session %d moved to trash; restorable until %s.", out.Session.ID, out.Session.TrashAfter.Format("2006-01-02 15:04 MST")),
		TrashAfter: timestamppb.New(*out.Session.TrashAfter),
	}, nil
}

// UnarchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UnarchiveSession(ctx context.Context, req *lifecyclev1.UnarchiveSessionRequest) (*lifecyclev1.UnarchiveSessionResponse, error) {
	sess, msg, _, err := s.transition(ctx, req.GetSessionId(), app.VerbUnarchive, domain.Command{Actor: actor(ctx, req.ActingSessionId)})
	if err != nil {
		return nil, err
	}
	clone, err := s.sessions.Transition.CloneRestoration(ctx, sess.GetId())
	if err != nil {
		// The unarchive has committed and the runner's restore effect is
		// queued; only the answer's clone fields are unknown.
		s.logger.WarnContext(ctx, "unarchived; could not ask the runner about the clone", "session_id", sess.GetId(), "error", err)
	}
	return &lifecyclev1.UnarchiveSessionResponse{Session: sess, Message: msg,
		CloneRestored: clone.Restored, CloneRecreated: clone.Recreated}, nil
}

// RestartSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RestartSession(ctx context.Context, req *lifecyclev1.RestartSessionRequest) (*lifecyclev1.RestartSessionResponse, error) {
	sess, msg, out, err := s.transition(ctx, req.GetSessionId(), app.VerbRestart, domain.Command{
		Actor: actor(ctx, req.ActingSessionId), IdempotencyKey: req.GetIdempotencyKey(),
	})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RestartSessionResponse{Session: sess, Message: msg, AlreadyApplied: out.AlreadyApplied}, nil
}

// TransitionSession implements lifecyclev1.LifecycleServiceServer: the
// machine's raw event, for harnesses and operators (REST
// POST /sessions/{id}/transition, MCP action_session transition) as well as
// the runner and recovery paths.
func (s *Server) TransitionSession(ctx context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	out, err := s.sessions.Transition.Fire(ctx, req.GetSessionId(), req.GetEvent(), domain.Command{
		Actor:          actor(ctx, req.ActingSessionId),
		FailureReason:  req.GetFailureReason(),
		SystemRecovery: req.GetSystemRecovery(),
		RunningJobID:   req.GetRunningJobId(),
		PausedBy:       req.GetPausedBy(),
		IdempotencyKey: req.GetIdempotencyKey(),

		AuthOutageReason: req.GetAuthOutageReason(),

		Elicitation:        wire.ElicitationFrom(req.GetElicitation()),
		ElicitationOutcome: req.GetElicitationOutcome(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, err := wire.Session(out.Session)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.TransitionSessionResponse{Session: sess, Message: describe(out), AlreadyApplied: out.AlreadyApplied}, nil
}

// GetSessionTimeline implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSessionTimeline(ctx context.Context, req *lifecyclev1.GetSessionTimelineRequest) (*lifecyclev1.GetSessionTimelineResponse, error) {
	ref, err := s.readableRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	lines, err := s.sessions.History.Timeline(ctx, ref)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.GetSessionTimelineResponse{Timeline: make([]*lifecyclev1.TimelineLine, len(lines))}
	for i, l := range lines {
		resp.Timeline[i] = &lifecyclev1.TimelineLine{Id: l.ID, Kind: string(l.Kind), Message: l.Message, CreatedAt: timestamppb.New(l.CreatedAt)}
	}
	return resp, nil
}

// ListSessionEvents implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessionEvents(ctx context.Context, req *lifecyclev1.ListSessionEventsRequest) (*lifecyclev1.ListSessionEventsResponse, error) {
	ref, err := s.readableRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	events, err := s.sessions.History.Events(ctx, ref)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.ListSessionEventsResponse{Events: make([]*lifecyclev1.StreamEvent, len(events))}
	for i, e := range events {
		payload, err := structpb.NewStruct(e.Payload)
		if err != nil {
			return nil, s.toStatus(ctx, fmt.Errorf("encode payload of event %s: %w", e.EventID, err))
		}
		resp.Events[i] = &lifecyclev1.StreamEvent{
			Id: e.ID, EventId: e.EventID, Name: e.Name, Alerting: e.Alerting,
			Payload: payload, CreatedAt: timestamppb.New(e.CreatedAt),
		}
	}
	return resp, nil
}

// MaxBulkArchive bounds one batch.
const MaxBulkArchive = 500

// BulkArchiveSessions implements lifecyclev1.LifecycleServiceServer. Each
// session is its own archive, the queue's guard included: one refusal (in
// the guard's words) does not undo the others. force applies to the
// whole batch.
func (s *Server) BulkArchiveSessions(ctx context.Context, req *lifecyclev1.BulkArchiveSessionsRequest) (*lifecyclev1.BulkArchiveSessionsResponse, error) {
	ids := req.GetSessionIds()
	if len(ids) == 0 || len(ids) > MaxBulkArchive {
		return nil, s.toStatus(ctx, &validation.Error{Violations: []validation.FieldViolation{{
			Field: "session_ids", Reason: fmt.Sprintf("give between 1 and %d ids or slugs", MaxBulkArchive),
		}}})
	}
	resp := &lifecyclev1.BulkArchiveSessionsResponse{Errors: []*lifecyclev1.BulkArchiveError{}}
	who := actor(ctx, req.ActingSessionId)
	who.Bulk = true
	for _, ref := range ids {
		if _, err := s.sessions.Transition.Handle(ctx, ref, app.Verb(domain.EventArchive), domain.Command{Actor: who, Force: req.GetForce()}); err != nil {
			resp.Errors = append(resp.Errors, &lifecyclev1.BulkArchiveError{SessionId: ref, Error: status.Convert(s.toStatus(ctx, err)).Message()})
			continue
		}
		resp.ArchivedCount++
	}
	return resp, nil
}

// FailSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) FailSession(ctx context.Context, req *lifecyclev1.FailSessionRequest) (*lifecyclev1.FailSessionResponse, error) {
	sess, msg, _, err := s.transition(ctx, req.GetSessionId(), app.Verb(domain.EventFail),
		domain.Command{Actor: actor(ctx, req.ActingSessionId), FailureReason: req.GetFailureReason()})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.FailSessionResponse{Session: sess, Message: msg}, nil
}
