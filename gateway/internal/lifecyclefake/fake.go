// Package lifecyclefake is a lifecycle service for the gateway's tests: it
// records every call and answers what the test set up. It runs no state
// machine and checks nothing; the end-to-end tests prove the real service.
// A gateway test says what the real service would answer (a session, a
// refusal, a validation error) and asserts what the gateway makes of it.
package lifecyclefake

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// Now is the time of the default session.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Session is the session a default answer carries: #1, waiting, created at
// Now.
func Session() *lifecyclev1.Session {
	return &lifecyclev1.Session{
		Id: 1, Status: "waiting", Genesis: "api", SchedulingClass: "priority",
		CustomMetadata: &structpb.Struct{Fields: map[string]*structpb.Value{}},
		CreatedAt:      timestamppb.New(Now), UpdatedAt: timestamppb.New(Now),
	}
}

// Call is one call the fake received.
type Call struct {
	Method  string // e.g. "ArchiveSession"
	Surface string // the surface the gateway declared (platform/surface)
	Request proto.Message
}

// Handler answers one call: a response of the method's type, or an error.
type Handler func(req proto.Message) (proto.Message, error)

// Trigger is the trigger a default answer carries: #1, a one-time wake of
// session #1 an hour after Now.
func Trigger() *lifecyclev1.Trigger {
	return &lifecyclev1.Trigger{
		Id: 1, SessionId: 1, Kind: "one_time", FireAt: timestamppb.New(Now.Add(time.Hour)), Source: "wake_me_up_later",
		CreatedAt: timestamppb.New(Now), WorkflowId: "wake/1/1",
	}
}

// Server implements lifecyclev1.LifecycleServiceServer, and the
// TriggerService the lifecycle process serves beside it, by recording each
// call (in one log: a trigger call is a lifecycle call) and answering, in
// order of precedence, FailWith's error, the method's Handle or Answer, or
// a default: the method's empty response with Session() in its session
// field and Trigger() in its trigger field, when it has them.
type Server struct {
	lifecyclev1.UnimplementedLifecycleServiceServer

	mu       sync.Mutex
	calls    []Call
	handlers map[string]Handler
	fail     error
}

// New returns a fake with no calls and the default answers.
func New() *Server { return &Server{handlers: map[string]Handler{}} }

// Register adds the fake to g: LifecycleService and TriggerService, as the
// lifecycle process serves them.
func (s *Server) Register(g *grpc.Server) {
	lifecyclev1.RegisterLifecycleServiceServer(g, s)
	lifecyclev1.RegisterTriggerServiceServer(g, &triggers{s: s})
}

// FailWith makes every later call return err (nil restores the answers).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Answer makes every later call of method answer resp (a copy) or err.
func (s *Server) Answer(method string, resp proto.Message, err error) {
	s.Handle(method, func(proto.Message) (proto.Message, error) {
		if err != nil {
			return nil, err
		}
		return proto.Clone(resp), nil
	})
}

// Handle makes every later call of method answer what h returns for its
// request.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

// Calls are the calls received so far, oldest first; with methods, only
// the calls of those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(methods) == 0 {
		return slices.Clone(s.calls)
	}
	var out []Call
	for _, c := range s.calls {
		if slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// answer records the call and answers it, as a Resp.
func answer[Resp proto.Message](ctx context.Context, s *Server, method string, req proto.Message) (Resp, error) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Surface: surface.Incoming(ctx), Request: proto.Clone(req)})
	fail, h := s.fail, s.handlers[method]
	s.mu.Unlock()

	var zero Resp
	if fail != nil {
		return zero, fail
	}
	if h == nil {
		resp := zero.ProtoReflect().New()
		if fd := resp.Descriptor().Fields().ByName("session"); fd != nil {
			resp.Set(fd, protoreflect.ValueOfMessage(Session().ProtoReflect()))
		}
		if fd := resp.Descriptor().Fields().ByName("trigger"); fd != nil {
			resp.Set(fd, protoreflect.ValueOfMessage(Trigger().ProtoReflect()))
		}
		return resp.Interface().(Resp), nil
	}
	resp, err := h(req)
	if err != nil {
		return zero, err
	}
	return resp.(Resp), nil
}

// CreateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateSession(ctx context.Context, req *lifecyclev1.CreateSessionRequest) (*lifecyclev1.CreateSessionResponse, error) {
	return answer[*lifecyclev1.CreateSessionResponse](ctx, s, "CreateSession", req)
}

// GetSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSession(ctx context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	return answer[*lifecyclev1.GetSessionResponse](ctx, s, "GetSession", req)
}

// ListSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessions(ctx context.Context, req *lifecyclev1.ListSessionsRequest) (*lifecyclev1.ListSessionsResponse, error) {
	return answer[*lifecyclev1.ListSessionsResponse](ctx, s, "ListSessions", req)
}

// UpdateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSession(ctx context.Context, req *lifecyclev1.UpdateSessionRequest) (*lifecyclev1.UpdateSessionResponse, error) {
	return answer[*lifecyclev1.UpdateSessionResponse](ctx, s, "UpdateSession", req)
}

// SetSessionHeartbeat implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetSessionHeartbeat(ctx context.Context, req *lifecyclev1.SetSessionHeartbeatRequest) (*lifecyclev1.SetSessionHeartbeatResponse, error) {
	return answer[*lifecyclev1.SetSessionHeartbeatResponse](ctx, s, "SetSessionHeartbeat", req)
}

// DeleteSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeleteSession(ctx context.Context, req *lifecyclev1.DeleteSessionRequest) (*lifecyclev1.DeleteSessionResponse, error) {
	return answer[*lifecyclev1.DeleteSessionResponse](ctx, s, "DeleteSession", req)
}

// GetSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSettings(ctx context.Context, req *lifecyclev1.GetSettingsRequest) (*lifecyclev1.GetSettingsResponse, error) {
	return answer[*lifecyclev1.GetSettingsResponse](ctx, s, "GetSettings", req)
}

// UpdateSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSettings(ctx context.Context, req *lifecyclev1.UpdateSettingsRequest) (*lifecyclev1.UpdateSettingsResponse, error) {
	return answer[*lifecyclev1.UpdateSettingsResponse](ctx, s, "UpdateSettings", req)
}

// PauseSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseSession(ctx context.Context, req *lifecyclev1.PauseSessionRequest) (*lifecyclev1.PauseSessionResponse, error) {
	return answer[*lifecyclev1.PauseSessionResponse](ctx, s, "PauseSession", req)
}

// SleepSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SleepSession(ctx context.Context, req *lifecyclev1.SleepSessionRequest) (*lifecyclev1.SleepSessionResponse, error) {
	return answer[*lifecyclev1.SleepSessionResponse](ctx, s, "SleepSession", req)
}

// ArchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ArchiveSession(ctx context.Context, req *lifecyclev1.ArchiveSessionRequest) (*lifecyclev1.ArchiveSessionResponse, error) {
	return answer[*lifecyclev1.ArchiveSessionResponse](ctx, s, "ArchiveSession", req)
}

// BulkArchiveSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) BulkArchiveSessions(ctx context.Context, req *lifecyclev1.BulkArchiveSessionsRequest) (*lifecyclev1.BulkArchiveSessionsResponse, error) {
	return answer[*lifecyclev1.BulkArchiveSessionsResponse](ctx, s, "BulkArchiveSessions", req)
}

// UnarchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UnarchiveSession(ctx context.Context, req *lifecyclev1.UnarchiveSessionRequest) (*lifecyclev1.UnarchiveSessionResponse, error) {
	return answer[*lifecyclev1.UnarchiveSessionResponse](ctx, s, "UnarchiveSession", req)
}

// RestartSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RestartSession(ctx context.Context, req *lifecyclev1.RestartSessionRequest) (*lifecyclev1.RestartSessionResponse, error) {
	return answer[*lifecyclev1.RestartSessionResponse](ctx, s, "RestartSession", req)
}

// FailSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) FailSession(ctx context.Context, req *lifecyclev1.FailSessionRequest) (*lifecyclev1.FailSessionResponse, error) {
	return answer[*lifecyclev1.FailSessionResponse](ctx, s, "FailSession", req)
}

// GetSessionTimeline implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSessionTimeline(ctx context.Context, req *lifecyclev1.GetSessionTimelineRequest) (*lifecyclev1.GetSessionTimelineResponse, error) {
	return answer[*lifecyclev1.GetSessionTimelineResponse](ctx, s, "GetSessionTimeline", req)
}

// ListSessionEvents implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessionEvents(ctx context.Context, req *lifecyclev1.ListSessionEventsRequest) (*lifecyclev1.ListSessionEventsResponse, error) {
	return answer[*lifecyclev1.ListSessionEventsResponse](ctx, s, "ListSessionEvents", req)
}

// TransitionSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) TransitionSession(ctx context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	return answer[*lifecyclev1.TransitionSessionResponse](ctx, s, "TransitionSession", req)
}

// MintSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) MintSessionCredential(ctx context.Context, req *lifecyclev1.MintSessionCredentialRequest) (*lifecyclev1.MintSessionCredentialResponse, error) {
	return answer[*lifecyclev1.MintSessionCredentialResponse](ctx, s, "MintSessionCredential", req)
}

// RevokeSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeSessionCredential(ctx context.Context, req *lifecyclev1.RevokeSessionCredentialRequest) (*lifecyclev1.RevokeSessionCredentialResponse, error) {
	return answer[*lifecyclev1.RevokeSessionCredentialResponse](ctx, s, "RevokeSessionCredential", req)
}

// AuthenticateSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AuthenticateSessionCredential(ctx context.Context, req *lifecyclev1.AuthenticateSessionCredentialRequest) (*lifecyclev1.AuthenticateSessionCredentialResponse, error) {
	return answer[*lifecyclev1.AuthenticateSessionCredentialResponse](ctx, s, "AuthenticateSessionCredential", req)
}

// DeliverTurn implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeliverTurn(ctx context.Context, req *lifecyclev1.DeliverTurnRequest) (*lifecyclev1.DeliverTurnResponse, error) {
	return answer[*lifecyclev1.DeliverTurnResponse](ctx, s, "DeliverTurn", req)
}

// ListRecoveryCandidates implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListRecoveryCandidates(ctx context.Context, req *lifecyclev1.ListRecoveryCandidatesRequest) (*lifecyclev1.ListRecoveryCandidatesResponse, error) {
	return answer[*lifecyclev1.ListRecoveryCandidatesResponse](ctx, s, "ListRecoveryCandidates", req)
}

// AbandonRecovery implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AbandonRecovery(ctx context.Context, req *lifecyclev1.AbandonRecoveryRequest) (*lifecyclev1.AbandonRecoveryResponse, error) {
	return answer[*lifecyclev1.AbandonRecoveryResponse](ctx, s, "AbandonRecovery", req)
}

// RecordTimelineNote implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordTimelineNote(ctx context.Context, req *lifecyclev1.RecordTimelineNoteRequest) (*lifecyclev1.RecordTimelineNoteResponse, error) {
	return answer[*lifecyclev1.RecordTimelineNoteResponse](ctx, s, "RecordTimelineNote", req)
}

// RecordDrainAttempt implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordDrainAttempt(ctx context.Context, req *lifecyclev1.RecordDrainAttemptRequest) (*lifecyclev1.RecordDrainAttemptResponse, error) {
	return answer[*lifecyclev1.RecordDrainAttemptResponse](ctx, s, "RecordDrainAttempt", req)
}

// RevokeTurnCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeTurnCredentials(ctx context.Context, req *lifecyclev1.RevokeTurnCredentialsRequest) (*lifecyclev1.RevokeTurnCredentialsResponse, error) {
	return answer[*lifecyclev1.RevokeTurnCredentialsResponse](ctx, s, "RevokeTurnCredentials", req)
}

// SweepNodeCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SweepNodeCredentials(ctx context.Context, req *lifecyclev1.SweepNodeCredentialsRequest) (*lifecyclev1.SweepNodeCredentialsResponse, error) {
	return answer[*lifecyclev1.SweepNodeCredentialsResponse](ctx, s, "SweepNodeCredentials", req)
}

// RefreshSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RefreshSession(ctx context.Context, req *lifecyclev1.RefreshSessionRequest) (*lifecyclev1.RefreshSessionResponse, error) {
	return answer[*lifecyclev1.RefreshSessionResponse](ctx, s, "RefreshSession", req)
}

// triggers implements lifecyclev1.TriggerServiceServer over the Server's
// recorder; its methods are named as the trigger RPCs (no lifecycle RPC
// shares a name with one).
type triggers struct {
	lifecyclev1.UnimplementedTriggerServiceServer
	s *Server
}

// WakeMeUpLater implements lifecyclev1.TriggerServiceServer.
func (t *triggers) WakeMeUpLater(ctx context.Context, req *lifecyclev1.WakeMeUpLaterRequest) (*lifecyclev1.WakeMeUpLaterResponse, error) {
	return answer[*lifecyclev1.WakeMeUpLaterResponse](ctx, t.s, "WakeMeUpLater", req)
}

// PauseUntil implements lifecyclev1.TriggerServiceServer.
func (t *triggers) PauseUntil(ctx context.Context, req *lifecyclev1.PauseUntilRequest) (*lifecyclev1.PauseUntilResponse, error) {
	return answer[*lifecyclev1.PauseUntilResponse](ctx, t.s, "PauseUntil", req)
}

// WatchSession implements lifecyclev1.TriggerServiceServer.
func (t *triggers) WatchSession(ctx context.Context, req *lifecyclev1.WatchSessionRequest) (*lifecyclev1.WatchSessionResponse, error) {
	return answer[*lifecyclev1.WatchSessionResponse](ctx, t.s, "WatchSession", req)
}

// ListTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggers) ListTriggers(ctx context.Context, req *lifecyclev1.ListTriggersRequest) (*lifecyclev1.ListTriggersResponse, error) {
	return answer[*lifecyclev1.ListTriggersResponse](ctx, t.s, "ListTriggers", req)
}

// SearchTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggers) SearchTriggers(ctx context.Context, req *lifecyclev1.SearchTriggersRequest) (*lifecyclev1.SearchTriggersResponse, error) {
	return answer[*lifecyclev1.SearchTriggersResponse](ctx, t.s, "SearchTriggers", req)
}

// CancelTrigger implements lifecyclev1.TriggerServiceServer.
func (t *triggers) CancelTrigger(ctx context.Context, req *lifecyclev1.CancelTriggerRequest) (*lifecyclev1.CancelTriggerResponse, error) {
	return answer[*lifecyclev1.CancelTriggerResponse](ctx, t.s, "CancelTrigger", req)
}

// AwaitingScheduledWake implements lifecyclev1.TriggerServiceServer.
func (t *triggers) AwaitingScheduledWake(ctx context.Context, req *lifecyclev1.AwaitingScheduledWakeRequest) (*lifecyclev1.AwaitingScheduledWakeResponse, error) {
	return answer[*lifecyclev1.AwaitingScheduledWakeResponse](ctx, t.s, "AwaitingScheduledWake", req)
}
