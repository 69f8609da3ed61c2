package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

// ProvenanceUseCases are the use cases behind ProvenanceServer.
type ProvenanceUseCases struct {
	ListUsers            app.ListUsers
	CreateUser           app.CreateUser
	UpdateUser           app.UpdateUser
	RecordHumanMessage   app.RecordHumanMessage
	GetSessionProvenance app.GetSessionProvenance
	GetPromptBlocks      app.GetPromptBlocks
}

// ProvenanceServer implements lineagev1.ProvenanceServiceServer.
type ProvenanceServer struct {
	lineagev1.UnimplementedProvenanceServiceServer
	uc     ProvenanceUseCases
	errors *Server // its toStatus
}

var _ lineagev1.ProvenanceServiceServer = (*ProvenanceServer)(nil)

// NewProvenance returns the server over uc; logger receives the errors
// reported to callers only as "internal error".
func NewProvenance(logger *slog.Logger, uc ProvenanceUseCases) *ProvenanceServer {
	return &ProvenanceServer{uc: uc, errors: &Server{logger: logger}}
}

// toStatus adds the roster's errors to the service's one mapping.
func (s *ProvenanceServer) toStatus(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, domain.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, domain.ErrConflict):
		return status.Error(codes.Aborted, err.Error())
	case isForbidden(err), errors.Is(err, boundary.ErrNoBoundary):
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return s.errors.toStatus(ctx, err)
}

// ListUsers implements lineagev1.ProvenanceServiceServer.
func (s *ProvenanceServer) ListUsers(ctx context.Context, _ *lineagev1.ListUsersRequest) (*lineagev1.ListUsersResponse, error) {
	if err := serviceItself(ctx, "ListUsers"); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	users, err := s.uc.ListUsers.Handle(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &lineagev1.ListUsersResponse{Users: make([]*lineagev1.User, 0, len(users))}
	for _, u := range users {
		out.Users = append(out.Users, userToProto(u))
	}
	return out, nil
}

// CreateUser implements lineagev1.ProvenanceServiceServer.
func (s *ProvenanceServer) CreateUser(ctx context.Context, req *lineagev1.CreateUserRequest) (*lineagev1.CreateUserResponse, error) {
	if err := serviceItself(ctx, "CreateUser"); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	u, err := s.uc.CreateUser.Handle(ctx, domain.User{
		Key: req.GetKey(), DisplayName: req.GetDisplayName(), Email: req.GetEmail(),
		SlackUserIDs: req.GetSlackUserIds(), Notes: req.GetNotes(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.CreateUserResponse{User: userToProto(u)}, nil
}

// UpdateUser implements lineagev1.ProvenanceServiceServer.
func (s *ProvenanceServer) UpdateUser(ctx context.Context, req *lineagev1.UpdateUserRequest) (*lineagev1.UpdateUserResponse, error) {
	if err := serviceItself(ctx, "UpdateUser"); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	patch := domain.UserPatch{DisplayName: req.DisplayName, Email: req.Email, Notes: req.Notes}
	if req.GetSetSlackUserIds() {
		ids := req.GetSlackUserIds()
		patch.SlackUserIDs = &ids
	}
	u, err := s.uc.UpdateUser.Handle(ctx, req.GetKey(), patch)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.UpdateUserResponse{User: userToProto(u)}, nil
}

// RecordHumanMessage implements lineagev1.ProvenanceServiceServer. The
// actor is the boundary's, verified (boundary.Verified): a call that
// establishes none records nothing and is refused.
func (s *ProvenanceServer) RecordHumanMessage(ctx context.Context, req *lineagev1.RecordHumanMessageRequest) (*lineagev1.RecordHumanMessageResponse, error) {
	actor, err := boundary.Verified(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	in := app.RecordHumanMessageInput{
		Actor:               app.Actor{WebUIAdmin: actor.Kind == boundary.WebUIAdmin, SlackUserID: actor.SlackUserID},
		Provenance:          domain.Provenance(req.GetProvenance()),
		AuthoredInSessionID: req.GetAuthoredInSessionId(),
		Content:             req.GetContent(),
		SlackPermalink:      req.GetSlackPermalink(),
		IdempotencyKey:      req.GetIdempotencyKey(),
	}
	if req.GetOccurredAt() != nil {
		in.OccurredAt = req.GetOccurredAt().AsTime()
	}
	out, err := s.uc.RecordHumanMessage.Handle(ctx, in)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lineagev1.RecordHumanMessageResponse{Recorded: out.Recorded, NotRecordedReason: out.NotRecordedReason, AlreadyRecorded: out.AlreadyRecorded}
	if out.Recorded {
		resp.Message = humanMessageToProto(domain.PlacedMessage{HumanMessage: out.Message}, nil, "")
	}
	return resp, nil
}

// GetSessionProvenance implements lineagev1.ProvenanceServiceServer.
func (s *ProvenanceServer) GetSessionProvenance(ctx context.Context, req *lineagev1.GetSessionProvenanceRequest) (*lineagev1.GetSessionProvenanceResponse, error) {
	if err := mayRead(ctx, req.GetSessionId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	p, err := s.uc.GetSessionProvenance.Handle(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	shown := p.Shown()
	resp := &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy:      HierarchyToProto(p.Hierarchy),
		HumanMessages:         make([]*lineagev1.HumanMessage, 0, len(shown)),
		OlderCount:            int32(p.NotShown()),              //nolint:gosec // bounded by the rows of one hierarchy
		HereCount:             int32(p.Messages.HereCount),      //nolint:gosec // bounded by the rows of one hierarchy
		ElsewhereCount:        int32(p.Messages.ElsewhereCount), //nolint:gosec // same
		ElsewhereCountIsFloor: p.Messages.Truncated,
		HumanMessageHere:      p.Messages.HumanMessageHere(),
		Markdown:              domain.RenderProvenanceSections(p),
	}
	for _, m := range shown {
		resp.HumanMessages = append(resp.HumanMessages, humanMessageToProto(m, p.Roster, p.AuthoredInLabel(m.HumanMessage)))
	}
	for _, u := range p.People() {
		resp.People = append(resp.People, userToProto(u))
	}
	return resp, nil
}

// GetPromptBlocks implements lineagev1.ProvenanceServiceServer.
func (s *ProvenanceServer) GetPromptBlocks(ctx context.Context, req *lineagev1.GetPromptBlocksRequest) (*lineagev1.GetPromptBlocksResponse, error) {
	b, err := s.uc.GetPromptBlocks.Handle(ctx, app.PromptBlocksRequest{
		SessionID: req.GetSessionId(), ViaMCP: req.GetProvenanceViaMcpEnabled(), Notes: req.GetSessionNotes(),
		RequireRecorded: req.GetRequireRecorded(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.GetPromptBlocksResponse{
		SessionNotes: b.SessionNotes, SessionHierarchy: b.SessionHierarchy, HumanMessages: b.HumanMessages, Text: b.Text(),
	}, nil
}

func userToProto(u domain.User) *lineagev1.User {
	return &lineagev1.User{
		Key: u.Key, DisplayName: u.DisplayName, Email: u.Email, SlackUserIds: u.SlackUserIDs, Notes: u.Notes,
		CreatedAt: timestamp(u.CreatedAt), UpdatedAt: timestamp(u.UpdatedAt),
	}
}

// humanMessageToProto is the wire form of m, its author named by roster and
// the session it was said in by authoredIn (empty when no hierarchy was
// walked).
func humanMessageToProto(m domain.PlacedMessage, roster domain.Roster, authoredIn string) *lineagev1.HumanMessage {
	out := &lineagev1.HumanMessage{
		Id: m.ID, Author: m.Author, Provenance: string(m.Provenance),
		Channel: string(m.Provenance.Channel()), ChannelLabel: m.ChannelLabel(),
		AuthoredInSessionId: m.AuthoredInSessionID, AuthoredInLabel: authoredIn,
		Content: m.Content, SlackPermalink: m.SlackPermalink, OccurredAt: timestamp(m.OccurredAt), Origin: string(m.Origin),
	}
	if u, ok := roster[m.Author]; ok {
		out.AuthorDisplayName = u.DisplayName
	}
	return out
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
