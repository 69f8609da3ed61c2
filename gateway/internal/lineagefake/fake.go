// Package lineagefake is an in-memory lineage ProvenanceService for the
// gateway's tests: canned provenance per session, a roster, and a count of
// every call so a test can prove which methods a surface reaches.
package lineagefake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

// WriteMethods are the ProvenanceService methods that change state.
var WriteMethods = []string{"CreateUser", "UpdateUser", "RecordHumanMessage"}

// Server is the fake.
type Server struct {
	lineagev1.UnimplementedProvenanceServiceServer

	mu         sync.Mutex
	calls      map[string]int
	provenance map[int64]*lineagev1.GetSessionProvenanceResponse
	users      []*lineagev1.User
	fail       error
	recorded   []Recorded
}

// Recorded is a human message the fake recorded, with the actor the
// boundary established.
type Recorded struct {
	Actor   boundary.Actor
	Request *lineagev1.RecordHumanMessageRequest
}

// New returns a fake holding the seeded roster.
func New() *Server {
	return &Server{
		calls:      map[string]int{},
		provenance: map[int64]*lineagev1.GetSessionProvenanceResponse{},
		users: []*lineagev1.User{
			{Key: "juliehazz", DisplayName: "Julie"},
			{Key: "tadasant", DisplayName: "Tadas"},
		},
	}
}

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { lineagev1.RegisterProvenanceServiceServer(g, s) }

// SetProvenance is what GetSessionProvenance answers for id.
func (s *Server) SetProvenance(id int64, p *lineagev1.GetSessionProvenanceResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.provenance[id] = p
}

// FailWith makes every call fail with err (nil: succeed again).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Calls returns how often method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func (s *Server) enter(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	return s.fail
}

// ListUsers implements lineagev1.ProvenanceServiceServer.
func (s *Server) ListUsers(context.Context, *lineagev1.ListUsersRequest) (*lineagev1.ListUsersResponse, error) {
	if err := s.enter("ListUsers"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &lineagev1.ListUsersResponse{Users: slices.Clone(s.users)}, nil
}

// CreateUser implements lineagev1.ProvenanceServiceServer.
func (s *Server) CreateUser(_ context.Context, req *lineagev1.CreateUserRequest) (*lineagev1.CreateUserResponse, error) {
	if err := s.enter("CreateUser"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.GetKey() == req.GetKey() {
			return nil, status.Errorf(codes.AlreadyExists, "user %q already exists", req.GetKey())
		}
		if err := s.taken(u, req.GetKey(), req.GetSlackUserIds()); err != nil {
			return nil, err
		}
	}
	u := &lineagev1.User{Key: req.GetKey(), DisplayName: req.GetDisplayName(), Email: req.GetEmail(), SlackUserIds: req.GetSlackUserIds(), Notes: req.GetNotes()}
	s.users = append(s.users, u)
	return &lineagev1.CreateUserResponse{User: u}, nil
}

// UpdateUser implements lineagev1.ProvenanceServiceServer.
func (s *Server) UpdateUser(_ context.Context, req *lineagev1.UpdateUserRequest) (*lineagev1.UpdateUserResponse, error) {
	if err := s.enter("UpdateUser"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var target *lineagev1.User
	for _, u := range s.users {
		if u.GetKey() == req.GetKey() {
			target = u
		} else if req.GetSetSlackUserIds() {
			if err := s.taken(u, req.GetKey(), req.GetSlackUserIds()); err != nil {
				return nil, err
			}
		}
	}
	if target == nil {
		return nil, status.Errorf(codes.NotFound, "no user with key %q", req.GetKey())
	}
	if req.DisplayName != nil {
		target.DisplayName = req.GetDisplayName()
	}
	if req.Email != nil {
		target.Email = req.GetEmail()
	}
	if req.Notes != nil {
		target.Notes = req.GetNotes()
	}
	if req.GetSetSlackUserIds() {
		target.SlackUserIds = req.GetSlackUserIds()
	}
	return &lineagev1.UpdateUserResponse{User: target}, nil
}

func (s *Server) taken(other *lineagev1.User, key string, ids []string) error {
	for _, id := range ids {
		if other.GetKey() != key && slices.Contains(other.GetSlackUserIds(), id) {
			return status.Error(codes.Aborted, fmt.Sprintf("slack user ID %s already belongs to user %q; remove it there first", id, other.GetKey()))
		}
	}
	return nil
}

// RecordHumanMessage implements lineagev1.ProvenanceServiceServer as
// lineage does: only with a boundary's verified actor (boundary.Verified).
// No public surface of the gateway may call it, and tests count that none
// does; only the test boundary does.
func (s *Server) RecordHumanMessage(ctx context.Context, req *lineagev1.RecordHumanMessageRequest) (*lineagev1.RecordHumanMessageResponse, error) {
	if err := s.enter("RecordHumanMessage"); err != nil {
		return nil, err
	}
	actor, err := boundary.Verified(ctx)
	if err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	author := "tadasant" // the default admin
	if actor.Kind == boundary.SlackUser {
		author = ""
		for _, u := range s.users {
			if slices.Contains(u.GetSlackUserIds(), actor.SlackUserID) {
				author = u.GetKey()
			}
		}
		if author == "" {
			return &lineagev1.RecordHumanMessageResponse{NotRecordedReason: "slack user " + actor.SlackUserID + " belongs to nobody in the users roster"}, nil
		}
	}
	s.recorded = append(s.recorded, Recorded{Actor: actor, Request: req})
	return &lineagev1.RecordHumanMessageResponse{Recorded: true, Message: &lineagev1.HumanMessage{
		Id: int64(len(s.recorded)), Author: author, Provenance: req.GetProvenance(),
		AuthoredInSessionId: req.GetAuthoredInSessionId(), Content: req.GetContent(),
	}}, nil
}

// Recorded returns the messages recorded, oldest first.
func (s *Server) Recorded() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recorded)
}

// GetSessionProvenance implements lineagev1.ProvenanceServiceServer: the
// canned answer, else the session alone with no messages.
func (s *Server) GetSessionProvenance(_ context.Context, req *lineagev1.GetSessionProvenanceRequest) (*lineagev1.GetSessionProvenanceResponse, error) {
	if err := s.enter("GetSessionProvenance"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.provenance[req.GetSessionId()]; ok {
		return p, nil
	}
	id := req.GetSessionId()
	return &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy: &lineagev1.SessionHierarchy{OriginSessionId: id, RootSessionIds: []int64{id},
			Nodes: []*lineagev1.HierarchyNode{{Id: id, Current: true}}},
		Markdown: fmt.Sprintf("### Session Hierarchy\n\nSession #%d is alone in its hierarchy.\n\n### Human Messages\n\nAuthored in this session: 0. Elsewhere in the hierarchy: 0.\n", id),
	}, nil
}

// GetPromptBlocks implements lineagev1.ProvenanceServiceServer.
func (s *Server) GetPromptBlocks(context.Context, *lineagev1.GetPromptBlocksRequest) (*lineagev1.GetPromptBlocksResponse, error) {
	if err := s.enter("GetPromptBlocks"); err != nil {
		return nil, err
	}
	return &lineagev1.GetPromptBlocksResponse{}, nil
}
