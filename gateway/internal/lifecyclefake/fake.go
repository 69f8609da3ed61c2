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
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
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
	calls    []Call
	archived map[int64]string // session → the status archive left
}

// Call is one state-changing call the fake received.
type Call struct {
	Method  string // e.g. "ArchiveSession"
	Surface string // the surface the gateway declared (platform/surface)
	Request proto.Message
}

// New returns an empty fake; ids start at 1.
func New() *Server {
	return &Server{
		sessions: map[int64]*lifecyclev1.Session{},
		archived: map[int64]string{},
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

// Calls are the state-changing calls received so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
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

		HeartbeatIntervalSeconds: 60,
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
	sess, err := s.find(req.GetSessionId())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetSessionResponse{Session: proto.CloneOf(sess)}, nil
}

// find resolves an id or slug as the real service does. Callers hold mu.
func (s *Server) find(ref string) (*lifecyclev1.Session, error) {
	if ref == "" {
		return nil, invalid([]*errdetails.BadRequest_FieldViolation{{Field: "session_id", Description: "is required: a numeric id or a slug"}})
	}
	for _, sess := range s.sessions {
		if strconv.FormatInt(sess.GetId(), 10) == ref || (sess.GetSlug() != "" && sess.GetSlug() == ref) {
			return sess, nil
		}
	}
	shown := strconv.Quote(ref)
	if isDigits(ref) {
		shown = "#" + ref
	}
	return nil, status.Errorf(codes.NotFound, "session %s not found; check the id or slug (GET /api/v1/sessions lists sessions)", shown)
}

// record notes a state-changing call and answers the configured failure,
// if any. Callers hold mu.
func (s *Server) record(ctx context.Context, method string, req proto.Message) error {
	s.calls = append(s.calls, Call{Method: method, Surface: surface.Incoming(ctx), Request: proto.Clone(req)})
	return s.fail
}

// UpdateSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) UpdateSession(ctx context.Context, req *lifecyclev1.UpdateSessionRequest) (*lifecyclev1.UpdateSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, "UpdateSession", req); err != nil {
		return nil, err
	}
	var vs []*errdetails.BadRequest_FieldViolation
	if req.Title != nil && utf8.RuneCountInString(req.GetTitle()) > 500 {
		vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: "title", Description: "is longer than 500 characters"})
	}
	if req.Notes != nil && utf8.RuneCountInString(req.GetNotes()) > 50_000 {
		vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: "notes", Description: "is longer than 50000 characters; keep the notes short and put the detail in the repository"})
	}
	if req.Title == nil && req.Notes == nil && req.HeartbeatEnabled == nil && req.HeartbeatIntervalSeconds == nil {
		vs = append(vs, &errdetails.BadRequest_FieldViolation{Field: "body", Description: "changes nothing; send at least one of title, notes, heartbeat_enabled, heartbeat_interval_seconds"})
	}
	if len(vs) > 0 {
		return nil, invalid(vs)
	}
	sess, err := s.update(req.GetSessionId(), req.HeartbeatEnabled, req.HeartbeatIntervalSeconds)
	if err != nil {
		return nil, err
	}
	if req.Title != nil {
		sess.Title = req.GetTitle()
	}
	if req.Notes != nil {
		sess.Notes = req.GetNotes()
	}
	return &lifecyclev1.UpdateSessionResponse{Session: proto.CloneOf(sess)}, nil
}

// SetSessionHeartbeat implements lifecyclev1.LifecycleServiceServer.
func (s *Server) SetSessionHeartbeat(ctx context.Context, req *lifecyclev1.SetSessionHeartbeatRequest) (*lifecyclev1.SetSessionHeartbeatResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, "SetSessionHeartbeat", req); err != nil {
		return nil, err
	}
	sess, err := s.update(req.GetSessionId(), req.Enabled, req.IntervalSeconds)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.SetSessionHeartbeatResponse{Session: proto.CloneOf(sess)}, nil
}

// update applies the heartbeat fields (validated as the real service
// does) and bumps the session's version. Callers hold mu.
func (s *Server) update(ref string, enabled *bool, interval *int32) (*lifecyclev1.Session, error) {
	if interval != nil && (*interval < 30 || *interval > 86_400) {
		return nil, invalid([]*errdetails.BadRequest_FieldViolation{{
			Field: "heartbeat_interval_seconds", Description: fmt.Sprintf("is %d; use 30 to 86400 seconds", *interval),
		}})
	}
	sess, err := s.find(ref)
	if err != nil {
		return nil, err
	}
	if enabled != nil {
		sess.HeartbeatEnabled = *enabled
	}
	if interval != nil {
		sess.HeartbeatIntervalSeconds = *interval
	}
	sess.Version++
	return sess, nil
}

// edge is one event of the machine: its from-states and its target.
type edge struct {
	event string
	from  []string
	to    string
}

// machine is the lifecycle state machine, in the real service's order:
// each event's from-states and target.
var machine = []edge{
	{"start", []string{"waiting"}, "running"},
	{"pause", []string{"running"}, "needs_input"},
	{"resume", []string{"waiting", "needs_input", "failed"}, "running"},
	{"sleep", []string{"needs_input"}, "waiting"},
	{"block_on_elicitation", []string{"running"}, "needs_input"},
	{"unblock_from_elicitation", []string{"needs_input"}, "running"},
	{"fail", []string{"waiting", "running", "needs_input"}, "failed"},
	{"archive", []string{"waiting", "running", "needs_input", "failed"}, "archived"},
	{"unarchive_to_waiting", []string{"archived"}, "waiting"},
	{"unarchive_to_failed", []string{"archived"}, "failed"},
	{"unarchive_to_needs_input", []string{"archived"}, "needs_input"},
}

// Events are the machine's events in the real service's order.
var Events = func() []string {
	names := make([]string, len(machine))
	for i, e := range machine {
		names[i] = e.event
	}
	return names
}()

// fire applies event to the session ref names, refusing it as the real
// service does. Callers hold mu.
func (s *Server) fire(ref, event string) (*lifecyclev1.Session, string, error) {
	i := slices.IndexFunc(machine, func(e edge) bool { return e.event == event })
	if i < 0 {
		return nil, "", invalid([]*errdetails.BadRequest_FieldViolation{{
			Field: "event", Description: fmt.Sprintf("unknown event %q; use one of %s", event, strings.Join(Events, ", ")),
		}})
	}
	sess, err := s.find(ref)
	if err != nil {
		return nil, "", err
	}
	e, from := machine[i], sess.GetStatus()
	if !slices.Contains(e.from, from) {
		return nil, "", status.Errorf(codes.FailedPrecondition, "cannot %s session %d: it is %s, and %s is only possible from %s",
			event, sess.GetId(), from, event, strings.Join(e.from, " or "))
	}
	sess.Status = e.to
	sess.Version++
	switch event {
	case "archive":
		s.archived[sess.GetId()] = from
		sess.ArchivedAt = timestamppb.New(s.now)
		sess.TrashAfter = timestamppb.New(s.now.Add(96 * time.Hour))
	case "unarchive_to_waiting", "unarchive_to_failed", "unarchive_to_needs_input":
		sess.ArchivedAt, sess.TrashAfter = nil, nil
	}
	return sess, fmt.Sprintf("Session %d: %s → %s.", sess.GetId(), from, sess.GetStatus()), nil
}

// PauseSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) PauseSession(ctx context.Context, req *lifecyclev1.PauseSessionRequest) (*lifecyclev1.PauseSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, "PauseSession", req); err != nil {
		return nil, err
	}
	sess, msg, err := s.fire(req.GetSessionId(), "pause")
	if err != nil {
		return nil, err
	}
	sess.PausedBy = "user"
	return &lifecyclev1.PauseSessionResponse{Session: proto.CloneOf(sess), Message: msg}, nil
}

// ArchiveSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ArchiveSession(ctx context.Context, req *lifecyclev1.ArchiveSessionRequest) (*lifecyclev1.ArchiveSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, "ArchiveSession", req); err != nil {
		return nil, err
	}
	sess, _, err := s.fire(req.GetSessionId(), "archive")
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.ArchiveSessionResponse{
		Session:    proto.CloneOf(sess),
		Message:    fmt.Sprintf("Session %d moved to trash; restorable until %s.", sess.GetId(), sess.GetTrashAfter().AsTime().Format("2006-01-02 15:04 MST")),
		TrashAfter: sess.GetTrashAfter(),
	}, nil
}

// TransitionSession implements lifecyclev1.LifecycleServiceServer.
func (s *Server) TransitionSession(ctx context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, "TransitionSession", req); err != nil {
		return nil, err
	}
	sess, msg, err := s.fire(req.GetSessionId(), req.GetEvent())
	if err != nil {
		return nil, err
	}
	switch req.GetEvent() {
	case "pause":
		sess.PausedBy = req.GetPausedBy()
	case "fail":
		sess.FailureReason = req.GetFailureReason()
	}
	return &lifecyclev1.TransitionSessionResponse{Session: proto.CloneOf(sess), Message: msg}, nil
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
