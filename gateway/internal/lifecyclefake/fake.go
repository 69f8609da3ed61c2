// Package lifecyclefake is a lifecycle service for the gateway's tests: a
// grpcfake recorder answering a session and a trigger by default. It runs
// no state machine and checks nothing; the end-to-end tests prove the real
// service.
package lifecyclefake

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
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
type Call = grpcfake.Call

// Trigger is the trigger a default answer carries: #1, a one-time wake of
// session #1 an hour after Now.
func Trigger() *lifecyclev1.Trigger {
	return &lifecyclev1.Trigger{
		Id: 1, SessionId: 1, Kind: "one_time", FireAt: timestamppb.New(Now.Add(time.Hour)), Source: "wake_me_up_later",
		CreatedAt: timestamppb.New(Now), WorkflowId: "wake/1/1",
	}
}

// Server implements lifecyclev1.LifecycleServiceServer, and the
// TriggerService the lifecycle process serves beside it, as a recorder
// (grpcfake: one log, a trigger call is a lifecycle call) whose default
// answer is the method's empty response with Session() in its session
// field and Trigger() in its trigger field, when it has them.
type Server struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	*grpcfake.Recorder
}

// New returns a fake with no calls and the default answers.
func New() *Server { return &Server{Recorder: grpcfake.NewRecorder(defaults)} }

func defaults(resp protoreflect.Message) {
	if fd := resp.Descriptor().Fields().ByName("session"); fd != nil {
		resp.Set(fd, protoreflect.ValueOfMessage(Session().ProtoReflect()))
	}
	if fd := resp.Descriptor().Fields().ByName("trigger"); fd != nil {
		resp.Set(fd, protoreflect.ValueOfMessage(Trigger().ProtoReflect()))
	}
}

// Register adds the fake to g: LifecycleService and TriggerService, as the
// lifecycle process serves them.
func (s *Server) Register(g *grpc.Server) {
	lifecyclev1.RegisterLifecycleServiceServer(g, s)
	lifecyclev1.RegisterTriggerServiceServer(g, &triggers{s: s})
}

// CreateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateSession(ctx context.Context, req *lifecyclev1.CreateSessionRequest) (*lifecyclev1.CreateSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.CreateSessionResponse](ctx, s.Recorder, req)
}

// GetSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSession(ctx context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.GetSessionResponse](ctx, s.Recorder, req)
}

// ListSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessions(ctx context.Context, req *lifecyclev1.ListSessionsRequest) (*lifecyclev1.ListSessionsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListSessionsResponse](ctx, s.Recorder, req)
}

// UpdateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSession(ctx context.Context, req *lifecyclev1.UpdateSessionRequest) (*lifecyclev1.UpdateSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UpdateSessionResponse](ctx, s.Recorder, req)
}

// SetSessionHeartbeat implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetSessionHeartbeat(ctx context.Context, req *lifecyclev1.SetSessionHeartbeatRequest) (*lifecyclev1.SetSessionHeartbeatResponse, error) {
	return grpcfake.Answer[*lifecyclev1.SetSessionHeartbeatResponse](ctx, s.Recorder, req)
}

// DeleteSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeleteSession(ctx context.Context, req *lifecyclev1.DeleteSessionRequest) (*lifecyclev1.DeleteSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.DeleteSessionResponse](ctx, s.Recorder, req)
}

// GetSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSettings(ctx context.Context, req *lifecyclev1.GetSettingsRequest) (*lifecyclev1.GetSettingsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.GetSettingsResponse](ctx, s.Recorder, req)
}

// UpdateSettings implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSettings(ctx context.Context, req *lifecyclev1.UpdateSettingsRequest) (*lifecyclev1.UpdateSettingsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UpdateSettingsResponse](ctx, s.Recorder, req)
}

// ListElicitations implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListElicitations(ctx context.Context, req *lifecyclev1.ListElicitationsRequest) (*lifecyclev1.ListElicitationsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListElicitationsResponse](ctx, s.Recorder, req)
}

// AnswerElicitation implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AnswerElicitation(ctx context.Context, req *lifecyclev1.AnswerElicitationRequest) (*lifecyclev1.AnswerElicitationResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AnswerElicitationResponse](ctx, s.Recorder, req)
}

// PauseSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseSession(ctx context.Context, req *lifecyclev1.PauseSessionRequest) (*lifecyclev1.PauseSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.PauseSessionResponse](ctx, s.Recorder, req)
}

// SleepSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SleepSession(ctx context.Context, req *lifecyclev1.SleepSessionRequest) (*lifecyclev1.SleepSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.SleepSessionResponse](ctx, s.Recorder, req)
}

// PauseIntoSpotQueue implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseIntoSpotQueue(ctx context.Context, req *lifecyclev1.PauseIntoSpotQueueRequest) (*lifecyclev1.PauseIntoSpotQueueResponse, error) {
	return grpcfake.Answer[*lifecyclev1.PauseIntoSpotQueueResponse](ctx, s.Recorder, req)
}

// GetTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetTurnSlots(ctx context.Context, req *lifecyclev1.GetTurnSlotsRequest) (*lifecyclev1.GetTurnSlotsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.GetTurnSlotsResponse](ctx, s.Recorder, req)
}

// UpdateTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateTurnSlots(ctx context.Context, req *lifecyclev1.UpdateTurnSlotsRequest) (*lifecyclev1.UpdateTurnSlotsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UpdateTurnSlotsResponse](ctx, s.Recorder, req)
}

// AcquireTurnSlot implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AcquireTurnSlot(ctx context.Context, req *lifecyclev1.AcquireTurnSlotRequest) (*lifecyclev1.AcquireTurnSlotResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AcquireTurnSlotResponse](ctx, s.Recorder, req)
}

// ReleaseTurnSlot implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ReleaseTurnSlot(ctx context.Context, req *lifecyclev1.ReleaseTurnSlotRequest) (*lifecyclev1.ReleaseTurnSlotResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ReleaseTurnSlotResponse](ctx, s.Recorder, req)
}

// SetNodeTurnSlots implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetNodeTurnSlots(ctx context.Context, req *lifecyclev1.SetNodeTurnSlotsRequest) (*lifecyclev1.SetNodeTurnSlotsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.SetNodeTurnSlotsResponse](ctx, s.Recorder, req)
}

// ArchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ArchiveSession(ctx context.Context, req *lifecyclev1.ArchiveSessionRequest) (*lifecyclev1.ArchiveSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ArchiveSessionResponse](ctx, s.Recorder, req)
}

// BulkArchiveSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) BulkArchiveSessions(ctx context.Context, req *lifecyclev1.BulkArchiveSessionsRequest) (*lifecyclev1.BulkArchiveSessionsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.BulkArchiveSessionsResponse](ctx, s.Recorder, req)
}

// UnarchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UnarchiveSession(ctx context.Context, req *lifecyclev1.UnarchiveSessionRequest) (*lifecyclev1.UnarchiveSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UnarchiveSessionResponse](ctx, s.Recorder, req)
}

// RestartSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RestartSession(ctx context.Context, req *lifecyclev1.RestartSessionRequest) (*lifecyclev1.RestartSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RestartSessionResponse](ctx, s.Recorder, req)
}

// FailSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) FailSession(ctx context.Context, req *lifecyclev1.FailSessionRequest) (*lifecyclev1.FailSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.FailSessionResponse](ctx, s.Recorder, req)
}

// GetSessionTimeline implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSessionTimeline(ctx context.Context, req *lifecyclev1.GetSessionTimelineRequest) (*lifecyclev1.GetSessionTimelineResponse, error) {
	return grpcfake.Answer[*lifecyclev1.GetSessionTimelineResponse](ctx, s.Recorder, req)
}

// ListSessionEvents implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessionEvents(ctx context.Context, req *lifecyclev1.ListSessionEventsRequest) (*lifecyclev1.ListSessionEventsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListSessionEventsResponse](ctx, s.Recorder, req)
}

// TransitionSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) TransitionSession(ctx context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.TransitionSessionResponse](ctx, s.Recorder, req)
}

// MintSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) MintSessionCredential(ctx context.Context, req *lifecyclev1.MintSessionCredentialRequest) (*lifecyclev1.MintSessionCredentialResponse, error) {
	return grpcfake.Answer[*lifecyclev1.MintSessionCredentialResponse](ctx, s.Recorder, req)
}

// RevokeSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeSessionCredential(ctx context.Context, req *lifecyclev1.RevokeSessionCredentialRequest) (*lifecyclev1.RevokeSessionCredentialResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RevokeSessionCredentialResponse](ctx, s.Recorder, req)
}

// AuthenticateSessionCredential implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AuthenticateSessionCredential(ctx context.Context, req *lifecyclev1.AuthenticateSessionCredentialRequest) (*lifecyclev1.AuthenticateSessionCredentialResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AuthenticateSessionCredentialResponse](ctx, s.Recorder, req)
}

// DeliverTurn implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeliverTurn(ctx context.Context, req *lifecyclev1.DeliverTurnRequest) (*lifecyclev1.DeliverTurnResponse, error) {
	return grpcfake.Answer[*lifecyclev1.DeliverTurnResponse](ctx, s.Recorder, req)
}

// ListRecoveryCandidates implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListRecoveryCandidates(ctx context.Context, req *lifecyclev1.ListRecoveryCandidatesRequest) (*lifecyclev1.ListRecoveryCandidatesResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListRecoveryCandidatesResponse](ctx, s.Recorder, req)
}

// AbandonRecovery implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AbandonRecovery(ctx context.Context, req *lifecyclev1.AbandonRecoveryRequest) (*lifecyclev1.AbandonRecoveryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AbandonRecoveryResponse](ctx, s.Recorder, req)
}

// RecordTimelineNote implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordTimelineNote(ctx context.Context, req *lifecyclev1.RecordTimelineNoteRequest) (*lifecyclev1.RecordTimelineNoteResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RecordTimelineNoteResponse](ctx, s.Recorder, req)
}

// RecordDrainAttempt implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordDrainAttempt(ctx context.Context, req *lifecyclev1.RecordDrainAttemptRequest) (*lifecyclev1.RecordDrainAttemptResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RecordDrainAttemptResponse](ctx, s.Recorder, req)
}

// RevokeTurnCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RevokeTurnCredentials(ctx context.Context, req *lifecyclev1.RevokeTurnCredentialsRequest) (*lifecyclev1.RevokeTurnCredentialsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RevokeTurnCredentialsResponse](ctx, s.Recorder, req)
}

// SweepNodeCredentials implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SweepNodeCredentials(ctx context.Context, req *lifecyclev1.SweepNodeCredentialsRequest) (*lifecyclev1.SweepNodeCredentialsResponse, error) {
	return grpcfake.Answer[*lifecyclev1.SweepNodeCredentialsResponse](ctx, s.Recorder, req)
}

// RefreshSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RefreshSession(ctx context.Context, req *lifecyclev1.RefreshSessionRequest) (*lifecyclev1.RefreshSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RefreshSessionResponse](ctx, s.Recorder, req)
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
	return grpcfake.Answer[*lifecyclev1.WakeMeUpLaterResponse](ctx, t.s.Recorder, req)
}

// PauseUntil implements lifecyclev1.TriggerServiceServer.
func (t *triggers) PauseUntil(ctx context.Context, req *lifecyclev1.PauseUntilRequest) (*lifecyclev1.PauseUntilResponse, error) {
	return grpcfake.Answer[*lifecyclev1.PauseUntilResponse](ctx, t.s.Recorder, req)
}

// WatchSession implements lifecyclev1.TriggerServiceServer.
func (t *triggers) WatchSession(ctx context.Context, req *lifecyclev1.WatchSessionRequest) (*lifecyclev1.WatchSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.WatchSessionResponse](ctx, t.s.Recorder, req)
}

// ListTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggers) ListTriggers(ctx context.Context, req *lifecyclev1.ListTriggersRequest) (*lifecyclev1.ListTriggersResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListTriggersResponse](ctx, t.s.Recorder, req)
}

// SearchTriggers implements lifecyclev1.TriggerServiceServer.
func (t *triggers) SearchTriggers(ctx context.Context, req *lifecyclev1.SearchTriggersRequest) (*lifecyclev1.SearchTriggersResponse, error) {
	return grpcfake.Answer[*lifecyclev1.SearchTriggersResponse](ctx, t.s.Recorder, req)
}

// CancelTrigger implements lifecyclev1.TriggerServiceServer.
func (t *triggers) CancelTrigger(ctx context.Context, req *lifecyclev1.CancelTriggerRequest) (*lifecyclev1.CancelTriggerResponse, error) {
	return grpcfake.Answer[*lifecyclev1.CancelTriggerResponse](ctx, t.s.Recorder, req)
}

// AwaitingScheduledWake implements lifecyclev1.TriggerServiceServer.
func (t *triggers) AwaitingScheduledWake(ctx context.Context, req *lifecyclev1.AwaitingScheduledWakeRequest) (*lifecyclev1.AwaitingScheduledWakeResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AwaitingScheduledWakeResponse](ctx, t.s.Recorder, req)
}

// ClearTrashExpiry implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ClearTrashExpiry(ctx context.Context, req *lifecyclev1.ClearTrashExpiryRequest) (*lifecyclev1.ClearTrashExpiryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ClearTrashExpiryResponse](ctx, s.Recorder, req)
}

// CreateStatusSummaryFork implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateStatusSummaryFork(ctx context.Context, req *lifecyclev1.CreateStatusSummaryForkRequest) (*lifecyclev1.CreateStatusSummaryForkResponse, error) {
	return grpcfake.Answer[*lifecyclev1.CreateStatusSummaryForkResponse](ctx, s.Recorder, req)
}

// HarvestStatusSummaryFork implements lifecyclev1.LifecycleServiceServer.
func (s *Server) HarvestStatusSummaryFork(ctx context.Context, req *lifecyclev1.HarvestStatusSummaryForkRequest) (*lifecyclev1.HarvestStatusSummaryForkResponse, error) {
	return grpcfake.Answer[*lifecyclev1.HarvestStatusSummaryForkResponse](ctx, s.Recorder, req)
}

// ListCategories implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListCategories(ctx context.Context, req *lifecyclev1.ListCategoriesRequest) (*lifecyclev1.ListCategoriesResponse, error) {
	return grpcfake.Answer[*lifecyclev1.ListCategoriesResponse](ctx, s.Recorder, req)
}

// CreateCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateCategory(ctx context.Context, req *lifecyclev1.CreateCategoryRequest) (*lifecyclev1.CreateCategoryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.CreateCategoryResponse](ctx, s.Recorder, req)
}

// UpdateCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateCategory(ctx context.Context, req *lifecyclev1.UpdateCategoryRequest) (*lifecyclev1.UpdateCategoryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UpdateCategoryResponse](ctx, s.Recorder, req)
}

// DeleteCategory implements lifecyclev1.LifecycleServiceServer.
func (s *Server) DeleteCategory(ctx context.Context, req *lifecyclev1.DeleteCategoryRequest) (*lifecyclev1.DeleteCategoryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.DeleteCategoryResponse](ctx, s.Recorder, req)
}

// StarSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) StarSession(ctx context.Context, req *lifecyclev1.StarSessionRequest) (*lifecyclev1.StarSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.StarSessionResponse](ctx, s.Recorder, req)
}

// UnstarSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UnstarSession(ctx context.Context, req *lifecyclev1.UnstarSessionRequest) (*lifecyclev1.UnstarSessionResponse, error) {
	return grpcfake.Answer[*lifecyclev1.UnstarSessionResponse](ctx, s.Recorder, req)
}

// GetPendingInference implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetPendingInference(ctx context.Context, req *lifecyclev1.GetPendingInferenceRequest) (*lifecyclev1.GetPendingInferenceResponse, error) {
	return grpcfake.Answer[*lifecyclev1.GetPendingInferenceResponse](ctx, s.Recorder, req)
}

// RecordInference implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordInference(ctx context.Context, req *lifecyclev1.RecordInferenceRequest) (*lifecyclev1.RecordInferenceResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RecordInferenceResponse](ctx, s.Recorder, req)
}

// RecordPullRequest implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordPullRequest(ctx context.Context, req *lifecyclev1.RecordPullRequestRequest) (*lifecyclev1.RecordPullRequestResponse, error) {
	return grpcfake.Answer[*lifecyclev1.RecordPullRequestResponse](ctx, s.Recorder, req)
}

// AcceptGitHubDelivery implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AcceptGitHubDelivery(ctx context.Context, req *lifecyclev1.AcceptGitHubDeliveryRequest) (*lifecyclev1.AcceptGitHubDeliveryResponse, error) {
	return grpcfake.Answer[*lifecyclev1.AcceptGitHubDeliveryResponse](ctx, s.Recorder, req)
}
