// Package lifecyclefake is an in-memory lifecycle service for the gateway's
// tests. It validates requests the way the real service does for the cases
// the gateway's tests rely on, and answers with the real service's codes,
// details and message style.
package lifecyclefake

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// Server implements lifecyclev1.LifecycleServiceServer over a map.
type Server struct {
	lifecyclev1.UnimplementedLifecycleServiceServer

	mu       sync.Mutex
	nextID   int64
	sessions map[int64]*lifecyclev1.Session
	fail     error
	lastList *lifecyclev1.ListSessionsRequest
	now      time.Time
}

// New returns an empty fake; ids start at 1.
func New() *Server {
	return &Server{
		sessions: map[int64]*lifecyclev1.Session{},
		now:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(g, s) }

// FailWith makes every later call return err (nil restores normal service).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// SetStatus changes a session's status, as the real state machine would.
func (s *Server) SetStatus(id int64, st string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[id].Status = st
}

// LastList is the last ListSessions request received.
func (s *Server) LastList() *lifecyclev1.ListSessionsRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.CloneOf(s.lastList)
}

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// CreateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) CreateSession(_ context.Context, req *lifecyclev1.CreateSessionRequest) (*lifecyclev1.CreateSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var vs []*errdetails.BadRequest_FieldViolation
	add := func(field, reason string) {
		vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: field, Description: reason})
	}
	if req.GetPrompt() == "" {
		add("prompt", "is required: say what the agent should do")
	}
	if req.GetGitRoot() == "" {
		add("git_root", "is required: the repository the session's clone is made from")
	}
	if slug := req.GetSlug(); slug != "" && (!slugPattern.MatchString(slug) || isDigits(slug)) {
		add("slug", fmt.Sprintf("%q must be lowercase letters, digits and dashes, not all digits", slug))
	}
	switch req.GetSchedulingClass() {
	case "", "priority", "spot":
	default:
		add("scheduling_class", fmt.Sprintf("%q is not a scheduling class; use \"priority\" or \"spot\"", req.GetSchedulingClass()))
	}
	var parent *lifecyclev1.Session
	if req.ParentSessionId != nil {
		if parent = s.sessions[req.GetParentSessionId()]; parent == nil {
			add("parent_session_id", fmt.Sprintf("no session %d exists; pass the id of an existing session or omit it", req.GetParentSessionId()))
		}
	}
	if len(vs) > 0 {
		return nil, invalid(vs)
	}
	if req.GetSlug() != "" {
		for _, other := range s.sessions {
			if other.GetSlug() == req.GetSlug() {
				return nil, status.Errorf(codes.AlreadyExists, "slug %q is taken by session #%d; choose another", req.GetSlug(), other.GetId())
			}
		}
	}
	s.nextID++
	genesis := "api"
	if parent != nil {
		genesis = parent.GetGenesis()
	}
	class := req.GetSchedulingClass()
	if class == "" {
		class = "priority"
	}
	md := req.GetCustomMetadata()
	if md == nil {
		md = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	sess := &lifecyclev1.Session{
		Id:              s.nextID,
		Slug:            req.GetSlug(),
		Status:          "waiting",
		Title:           req.GetTitle(),
		Prompt:          req.GetPrompt(),
		Goal:            req.GetGoal(),
		AgentRoot:       req.GetAgentRoot(),
		AgentRuntime:    req.GetAgentRuntime(),
		GitRoot:         req.GetGitRoot(),
		Branch:          req.GetBranch(),
		Subdirectory:    req.GetSubdirectory(),
		ParentSessionId: req.ParentSessionId,
		Genesis:         genesis,
		SchedulingClass: class,
		Precedence:      req.GetPrecedence(),
		CustomMetadata:  md,
		CreatedAt:       timestamppb.New(s.now),
		UpdatedAt:       timestamppb.New(s.now),
	}
	s.sessions[sess.Id] = sess
	return &lifecyclev1.CreateSessionResponse{Session: proto.CloneOf(sess)}, nil
}

// GetSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	ref := req.GetSessionId()
	if ref == "" {
		return nil, invalid([]*errdetails.BadRequest_FieldViolation{{Field: "session_id", Description: "is required: a numeric id or a slug"}})
	}
	for _, sess := range s.sessions {
		if strconv.FormatInt(sess.GetId(), 10) == ref || (sess.GetSlug() != "" && sess.GetSlug() == ref) {
			return &lifecyclev1.GetSessionResponse{Session: proto.CloneOf(sess)}, nil
		}
	}
	shown := strconv.Quote(ref)
	if isDigits(ref) {
		shown = "#" + ref
	}
	return nil, status.Errorf(codes.NotFound, "session %s not found; check the id or slug (GET /api/v1/sessions lists sessions)", shown)
}

// ListSessions implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListSessions(_ context.Context, req *lifecyclev1.ListSessionsRequest) (*lifecyclev1.ListSessionsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastList = proto.CloneOf(req)
	if s.fail != nil {
		return nil, s.fail
	}
	page, perPage := max(req.GetPage(), 1), req.GetPerPage()
	if perPage <= 0 {
		perPage = 25
	}
	var matched []*lifecyclev1.Session
	for _, sess := range s.sessions {
		if len(req.GetStatus()) == 0 || slices.Contains(req.GetStatus(), sess.GetStatus()) {
			matched = append(matched, sess)
		}
	}
	slices.SortFunc(matched, func(a, b *lifecyclev1.Session) int { return int(b.GetId() - a.GetId()) }) // newest first
	total := int64(len(matched))
	from := min(int(page-1)*int(perPage), len(matched))
	to := min(from+int(perPage), len(matched))
	resp := &lifecyclev1.ListSessionsResponse{
		Pagination: &lifecyclev1.Pagination{
			Page:       page,
			PerPage:    perPage,
			TotalCount: total,
			TotalPages: int32((total + int64(perPage) - 1) / int64(perPage)),
		},
	}
	for _, sess := range matched[from:to] {
		resp.Sessions = append(resp.Sessions, proto.CloneOf(sess))
	}
	return resp, nil
}

// invalid is InvalidArgument as the real service builds it: every
// violation in the message ("field: reason; ...") and in BadRequest.
func invalid(vs []*errdetails.BadRequest_FieldViolation) error {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.GetField() + ": " + v.GetDescription()
	}
	st := status.New(codes.InvalidArgument, strings.Join(parts, "; "))
	if withDetails, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: vs}); err == nil {
		st = withDetails
	}
	return st.Err()
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
