// Package lineagefake is a lineage ProvenanceService for the gateway's
// tests: a grpcfake recorder. By default it answers a session's provenance
// as the session alone in its hierarchy (SetProvenance answers another for
// a session) and the roster as Roster(); anything else is what the test
// set (Answer, Handle, FailWith), else the method's empty response.
// RecordHumanMessage also requires, as lineage does, the actor a boundary
// declared (boundary.Verified): that is what the gateway's test boundary
// is tested against. Lineage's own tests prove its rules.
package lineagefake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

// WriteMethods are the ProvenanceService methods that change state.
var WriteMethods = []string{"CreateUser", "UpdateUser", "RecordHumanMessage"}

// Roster is the users ListUsers answers by default.
func Roster() []*lineagev1.User {
	return []*lineagev1.User{{Key: "juliehazz", DisplayName: "Julie"}, {Key: "tadasant", DisplayName: "Tadas"}}
}

// Alone is the provenance of session id alone in its hierarchy, with no
// human messages.
func Alone(id int64) *lineagev1.GetSessionProvenanceResponse {
	return &lineagev1.GetSessionProvenanceResponse{
		SessionHierarchy: &lineagev1.SessionHierarchy{OriginSessionId: id, RootSessionIds: []int64{id},
			Nodes: []*lineagev1.HierarchyNode{{Id: id, Current: true}}},
		Markdown: fmt.Sprintf("### Session Hierarchy\n\nSession #%d is alone in its hierarchy.\n\n### Human Messages\n\nAuthored in this session: 0. Elsewhere in the hierarchy: 0.\n", id),
	}
}

// Call is one call the fake received.
type Call = grpcfake.Call

// Recorded is a human message lineage answered as recorded, with the actor
// the boundary declared.
type Recorded struct {
	Actor   boundary.Actor
	Request *lineagev1.RecordHumanMessageRequest
}

// Server implements lineagev1.ProvenanceServiceServer as a recorder.
type Server struct {
	lineagev1.UnimplementedProvenanceServiceServer
	*grpcfake.Recorder

	// SignIns are the console's sign-ins (ConsoleSignInService), served
	// beside the ProvenanceService.
	SignIns *SignIns

	mu         sync.Mutex
	provenance map[int64]*lineagev1.GetSessionProvenanceResponse
	recorded   []Recorded
}

// New returns a fake with no calls and the default answers.
func New() *Server {
	s := &Server{
		Recorder: grpcfake.NewRecorder(func(resp protoreflect.Message) {
			if r, ok := resp.Interface().(*lineagev1.ListUsersResponse); ok {
				r.Users = Roster()
			}
		}),
		provenance: map[int64]*lineagev1.GetSessionProvenanceResponse{},
		SignIns:    NewSignIns(),
	}
	s.Handle("GetSessionProvenance", func(m proto.Message) (proto.Message, error) {
		id := m.(*lineagev1.GetSessionProvenanceRequest).GetSessionId()
		s.mu.Lock()
		defer s.mu.Unlock()
		if p, ok := s.provenance[id]; ok {
			return proto.Clone(p), nil
		}
		return Alone(id), nil
	})
	return s
}

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) {
	lineagev1.RegisterProvenanceServiceServer(g, s)
	lineagev1.RegisterConsoleSignInServiceServer(g, s.SignIns)
}

// SetProvenance is what GetSessionProvenance answers for session id.
func (s *Server) SetProvenance(id int64, p *lineagev1.GetSessionProvenanceResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.provenance[id] = proto.CloneOf(p)
}

// Recorded are the messages answered as recorded, oldest first.
func (s *Server) Recorded() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recorded)
}

// ListUsers implements lineagev1.ProvenanceServiceServer.
func (s *Server) ListUsers(ctx context.Context, req *lineagev1.ListUsersRequest) (*lineagev1.ListUsersResponse, error) {
	return grpcfake.Answer[*lineagev1.ListUsersResponse](ctx, s.Recorder, req)
}

// CreateUser implements lineagev1.ProvenanceServiceServer.
func (s *Server) CreateUser(ctx context.Context, req *lineagev1.CreateUserRequest) (*lineagev1.CreateUserResponse, error) {
	return grpcfake.Answer[*lineagev1.CreateUserResponse](ctx, s.Recorder, req)
}

// UpdateUser implements lineagev1.ProvenanceServiceServer.
func (s *Server) UpdateUser(ctx context.Context, req *lineagev1.UpdateUserRequest) (*lineagev1.UpdateUserResponse, error) {
	return grpcfake.Answer[*lineagev1.UpdateUserResponse](ctx, s.Recorder, req)
}

// RecordHumanMessage implements lineagev1.ProvenanceServiceServer: refused
// without a boundary's verified actor, as lineage refuses it; otherwise
// answered, and kept in Recorded with the actor when the answer says it
// was recorded.
func (s *Server) RecordHumanMessage(ctx context.Context, req *lineagev1.RecordHumanMessageRequest) (*lineagev1.RecordHumanMessageResponse, error) {
	resp, err := grpcfake.Answer[*lineagev1.RecordHumanMessageResponse](ctx, s.Recorder, req)
	if err != nil {
		return nil, err
	}
	actor, err := boundary.Verified(ctx)
	if err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	if resp.GetRecorded() {
		s.mu.Lock()
		s.recorded = append(s.recorded, Recorded{Actor: actor, Request: proto.CloneOf(req)})
		s.mu.Unlock()
	}
	return resp, nil
}

// GetSessionProvenance implements lineagev1.ProvenanceServiceServer.
func (s *Server) GetSessionProvenance(ctx context.Context, req *lineagev1.GetSessionProvenanceRequest) (*lineagev1.GetSessionProvenanceResponse, error) {
	return grpcfake.Answer[*lineagev1.GetSessionProvenanceResponse](ctx, s.Recorder, req)
}

// GetPromptBlocks implements lineagev1.ProvenanceServiceServer.
func (s *Server) GetPromptBlocks(ctx context.Context, req *lineagev1.GetPromptBlocksRequest) (*lineagev1.GetPromptBlocksResponse, error) {
	return grpcfake.Answer[*lineagev1.GetPromptBlocksResponse](ctx, s.Recorder, req)
}
