// Package grpcapi implements the lifecycle gRPC API over the app use cases.
package grpcapi

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Server implements lifecyclev1.LifecycleServiceServer.
type Server struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	sessions    app.Sessions
	settings    app.ExperimentalSettings
	credentials app.Credentials
	triggers    app.Triggers
	// recoveryCandidates serves ListRecoveryCandidates (recovery_candidates.go).
	recoveryCandidates app.ListRecoveryCandidates
	// externalLines serves RecordTimelineNote (deliveries.go).
	externalLines app.AppendExternalTimelineLines
	// sessionChanges serves WatchSessionChanges (changes.go).
	sessionChanges app.WatchSessionChanges
	// categories and inference serve categories.go.
	categories app.Categories
	inference  app.Inference
	// recordPullRequest and githubDeliveries serve the GitHub methods
	// (pullrequests.go).
	recordPullRequest app.RecordPullRequest
	githubDeliveries  app.AcceptGitHubDelivery
	// slots serves the turn slots and the spot queue (slots.go); nil when
	// none is configured (every turn runs at once).
	slots  *app.Slots
	logger *slog.Logger
}

// NewServer returns the API over the use cases.
func NewServer(sessions app.Sessions, settings app.ExperimentalSettings, logger *slog.Logger) *Server {
	return &Server{sessions: sessions, settings: settings, logger: logger}
}

// Register adds the service to s.
func (s *Server) Register(g *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(g, s) }

// CreateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateSession(ctx context.Context, req *lifecyclev1.CreateSessionRequest) (*lifecyclev1.CreateSessionResponse, error) {
	parent, err := childOf(ctx, req.ParentSessionId)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	n := domain.NewSession{
		Prompt:            req.GetPrompt(),
		GitRoot:           req.GetGitRoot(),
		Branch:            req.GetBranch(),
		Subdirectory:      req.GetSubdirectory(),
		Title:             req.GetTitle(),
		Slug:              req.GetSlug(),
		Goal:              req.GetGoal(),
		AgentRoot:         req.GetAgentRoot(),
		AgentRuntime:      req.GetAgentRuntime(),
		ParentSessionID:   parent,
		SchedulingClass:   req.GetSchedulingClass(),
		Precedence:        req.GetPrecedence(),
		MCPToolGroups:     req.GetMcpToolGroups(),
		PushNotifications: req.PushNotifications,
	}
	if md := req.GetCustomMetadata(); md != nil {
		n.CustomMetadata = md.AsMap()
	}
	// A session a Slack message started says so: only the Slack boundary,
	// a Zimmer service acting as itself, can declare that actor.
	if a, err := boundary.Verified(ctx); err == nil && a.Kind == boundary.SlackUser {
		n.BoundaryGenesis = domain.GenesisSlack
	}
	if caller, ok := sessionCaller(ctx); ok {
		if err := n.ChildCreatable(caller.SessionID); err != nil {
			return nil, s.toStatus(ctx, err)
		}
	}
	sess, err := s.sessions.Create.Handle(ctx, n)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(sess)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.CreateSessionResponse{Session: msg}, nil
}

// GetSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSession(ctx context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	sess, err := s.sessions.Get.Handle(ctx, req.GetSessionId())
	if err == nil {
		err = mayRead(ctx, sess)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := s.sessionWithWait(ctx, sess)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.GetSessionResponse{Session: msg}, nil
}

// ListSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessions(ctx context.Context, req *lifecyclev1.ListSessionsRequest) (*lifecyclev1.ListSessionsResponse, error) {
	switch req.GetView() {
	case "":
	case rules.ViewRanked:
		resp, err := s.rankedPage(ctx, req)
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		return resp, nil
	default:
		return nil, s.toStatus(ctx, validation.Invalid("view", "%q is not a view of the sessions: leave it out for every session, or give %q for the spot queue in run order",
			req.GetView(), rules.ViewRanked))
	}
	page, err := s.sessions.List.Handle(ctx, domain.ListRequest{
		Statuses:        req.GetStatus(),
		Query:           req.GetQ(),
		AgentRoot:       req.GetAgentRoot(),
		Genesis:         req.GetGenesis(),
		SchedulingClass: req.GetSchedulingClass(),
		Page:            int(req.GetPage()),
		PerPage:         int(req.GetPerPage()),
		ShowArchived:    req.GetShowArchived(),
		Starred:         req.Starred,
		CategoryID:      req.CategoryId,

		SkipFrozenCategories: req.GetSkipFrozenCategories(),
		Transcript:           req.GetTranscript(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.ListSessionsResponse{
		Sessions: make([]*lifecyclev1.Session, 0, len(page.Sessions)),
		Pagination: &lifecyclev1.Pagination{
			Page:       int32(page.Page),
			PerPage:    int32(page.PerPage),
			TotalCount: page.TotalCount,
			TotalPages: int32(page.TotalPages()),
		},
	}
	for _, sess := range page.Sessions {
		msg, err := wire.Session(sess.Summary())
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		resp.Sessions = append(resp.Sessions, msg)
	}
	if err := s.withWaits(ctx, resp.Sessions); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return resp, nil
}

// toStatus is the only mapping from errors to gRPC codes. Unexpected errors
// are logged and answered with "internal error": their text may carry
// details a caller must not see.
func (s *Server) toStatus(ctx context.Context, err error) error {
	var wake *domain.WakeRefusal
	if errors.As(err, &wake) {
		return wakeRefused(wake)
	}
	if st, ok := grpcstatus.Common(err); ok {
		return st
	}
	var (
		nf   *domain.NotFoundError
		terr *domain.TransitionError
	)
	switch {
	case errors.As(err, &terr):
		// A valid request the session's state refuses: REST answers 422.
		return status.Error(codes.FailedPrecondition, terr.Error())
	case errors.As(err, &nf):
		return status.Error(codes.NotFound, nf.Error())
	case errors.Is(err, domain.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, domain.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, domain.ErrConflict):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, domain.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, domain.ErrUnauthenticated):
		return credentialRefused(err)
	case errors.Is(err, domain.ErrForbidden):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, domain.ErrPrecondition):
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	s.logger.ErrorContext(ctx, "internal error", "error", err)
	return status.Error(codes.Internal, "internal error")
}

// wakeRefused is ScheduleWakeUp's refusal: FailedPrecondition when the
// session's state refused it, InvalidArgument with the field's violation
// otherwise (both 422 on REST), the original's code as an ErrorInfo's
// reason, which the gateway shows on REST and MCP alike.
func wakeRefused(e *domain.WakeRefusal) error {
	code := codes.InvalidArgument
	var details []protoadapt.MessageV1
	if e.StateRefusal() {
		code = codes.FailedPrecondition
	} else {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: e.Field, Description: e.Reason}}})
	}
	details = append(details, &errdetails.ErrorInfo{Reason: e.Code, Domain: rules.ErrorDomain})
	st := status.New(code, e.Error())
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}
