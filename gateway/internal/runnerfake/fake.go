// Package runnerfake is a runner service for the gateway's tests: it
// records every call, answers GetTranscript with a canned page (GetClone
// with a canned clone) and streams
// FollowTranscript from lines a test pushes. It keeps no transcript; the
// runner's own tests prove the real one.
package runnerfake

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Now is the time of the default transcript.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Transcript is the default answer of GetTranscript: one ended turn of
// session #1 with one line.
func Transcript() *runnerv1.GetTranscriptResponse {
	return &runnerv1.GetTranscriptResponse{
		Turns: []*runnerv1.TranscriptTurn{{
			TurnId: "turn-1", SessionId: 1, StartedAt: timestamppb.New(Now), EndedAt: timestamppb.New(Now),
			Outcome: "exited 0", StoredLines: 1,
		}},
		Lines: []*runnerv1.TranscriptLine{Line(1, "hello")},
	}
}

// Line is line id of turn-1 of session #1, an assistant line saying text.
func Line(id int64, text string) *runnerv1.TranscriptLine {
	return &runnerv1.TranscriptLine{
		Id: id, SessionId: 1, TurnId: "turn-1", Seq: int32(id), Kind: "assistant", Type: "assistant",
		Text: text, Raw: `{"type":"assistant"}`, CreatedAt: timestamppb.New(Now),
	}
}

// Call is one call the fake received.
type Call struct {
	Method    string // "GetTranscript" or "FollowTranscript"
	Request   proto.Message
	Principal principal.Principal // the principal the gateway forwarded
}

// Server implements runnerv1.RunnerServiceServer.
type Server struct {
	runnerv1.UnimplementedRunnerServiceServer

	mu         sync.Mutex
	calls      []Call
	transcript *runnerv1.GetTranscriptResponse
	fail       error
	followers  []chan *runnerv1.TranscriptLine
	followed   chan struct{} // closed and replaced when a follower arrives
}

// New returns a fake answering Transcript().
func New() *Server { return &Server{transcript: Transcript(), followed: make(chan struct{})} }

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { runnerv1.RegisterRunnerServiceServer(g, s) }

// FailWith makes every later call fail with err (nil restores the answers).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// SetTranscript is what GetTranscript answers from now on.
func (s *Server) SetTranscript(resp *runnerv1.GetTranscriptResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = proto.Clone(resp).(*runnerv1.GetTranscriptResponse)
}

// Calls are the calls received so far, oldest first; with methods, only
// the calls of those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Followers is how many FollowTranscript streams are open.
func (s *Server) Followers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.followers)
}

// Followed is closed once the next follower is streaming.
func (s *Server) Followed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.followed
}

// Push sends line to every open FollowTranscript stream; nil ends them, as
// a runner that stops does.
func (s *Server) Push(line *runnerv1.TranscriptLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.followers {
		if line == nil {
			f <- nil
			continue
		}
		f <- proto.Clone(line).(*runnerv1.TranscriptLine)
	}
}

func (s *Server) record(ctx context.Context, method string, req proto.Message) error {
	p, _ := principal.FromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Method: method, Request: proto.Clone(req), Principal: p})
	return s.fail
}

// GetTranscript implements runnerv1.RunnerServiceServer.
func (s *Server) GetTranscript(ctx context.Context, req *runnerv1.GetTranscriptRequest) (*runnerv1.GetTranscriptResponse, error) {
	if err := s.record(ctx, "GetTranscript", req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.Clone(s.transcript).(*runnerv1.GetTranscriptResponse), nil
}

// FollowTranscript implements runnerv1.RunnerServiceServer: it streams what
// Push sends until the caller goes away.
func (s *Server) FollowTranscript(req *runnerv1.FollowTranscriptRequest, stream grpc.ServerStreamingServer[runnerv1.FollowTranscriptResponse]) error {
	ctx := stream.Context()
	if err := s.record(ctx, "FollowTranscript", req); err != nil {
		return err
	}
	lines := make(chan *runnerv1.TranscriptLine, 100)
	s.mu.Lock()
	s.followers = append(s.followers, lines)
	close(s.followed)
	s.followed = make(chan struct{})
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.followers = slices.DeleteFunc(s.followers, func(c chan *runnerv1.TranscriptLine) bool { return c == lines })
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case l := <-lines:
			if l == nil {
				return nil
			}
			if err := stream.Send(&runnerv1.FollowTranscriptResponse{Line: l}); err != nil {
				return err
			}
		}
	}
}

// Clone is what GetClone answers for session id: a preserved clone whose
// artifacts are kept until a day after Now.
func Clone(id int64) *runnerv1.Clone {
	return &runnerv1.Clone{
		SessionId: id, Node: "node-a", Path: "/srv/workspaces/" + strconv.FormatInt(id, 10), State: "preserved",
		TrashAfter: timestamppb.New(Now.Add(24 * time.Hour)), Note: "the clone's unpushed work is kept",
		Artifacts: &runnerv1.PreservedArtifacts{
			Dir: "/srv/workspaces/.preserved/" + strconv.FormatInt(id, 10), BundleBytes: 1024, PatchBytes: 2048,
		},
	}
}

// GetClone implements runnerv1.RunnerServiceServer: Clone of the session.
func (s *Server) GetClone(ctx context.Context, req *runnerv1.GetCloneRequest) (*runnerv1.GetCloneResponse, error) {
	if err := s.record(ctx, "GetClone", req); err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(req.GetSessionId(), 10, 64)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "session_id %q is not numeric", req.GetSessionId())
	}
	return &runnerv1.GetCloneResponse{Clone: Clone(id)}, nil
}
